-- wrk script: like upload.lua, but every request carries one of many keys
-- (x-kiln-key), cycling through the lines of KEYFILE: ingest with auth and a
-- per-key rate limit on, as a fleet of senders would.
--   wrk -t1 -c64 -d20s -s bench/upload_keys.lua URL -- FILE SERVICE KEYFILE
local reqs, n = {}, 0

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local body = f:read("*a")
  f:close()
  local url = "/profiling/upload?serviceName=" .. (args[2] or "wrk")
  -- Requests are built once, so the client costs the same as upload.lua's.
  for key in io.lines(args[3]) do
    reqs[#reqs + 1] = wrk.format("POST", url,
      { ["Content-Type"] = "application/octet-stream", ["x-kiln-key"] = key }, body)
  end
end

function request()
  n = n + 1
  return reqs[(n % #reqs) + 1]
end

function done(summary, latency, requests)
  io.write(string.format("KILN_WRK requests=%d duration_us=%d p50_us=%d p99_us=%d non2xx=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), summary.errors.status))
end
