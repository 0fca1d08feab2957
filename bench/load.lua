-- wrk script for bench/load.sh: POSTs one pprof file to /profiling/upload and
-- counts answers by status across all threads (wrk's own non2xx lumps the
-- intended 429s together with real failures).
--   wrk -t2 -c1000 -d60s --latency -s bench/load.lua http://127.0.0.1:PORT -- FILE SERVICE
-- done() prints: KILN_LOAD requests=… p50_us=… p99_us=… max_us=… s200=… s429=… other=…
--   connect=… read=… write=… timeout=…

local threads = {}
local req

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local body = f:read("*a")
  f:close()
  req = wrk.format("POST", "/profiling/upload?serviceName=" .. (args[2] or "load"),
    { ["Content-Type"] = "application/octet-stream" }, body)
  s200, s429, other = 0, 0, 0
end

function request()
  return req
end

function response(status, headers, body)
  if status == 200 then s200 = s200 + 1
  elseif status == 429 then s429 = s429 + 1
  else other = other + 1 end
end

function done(summary, latency, requests)
  local a, b, o = 0, 0, 0
  for _, t in ipairs(threads) do
    a = a + t:get("s200")
    b = b + t:get("s429")
    o = o + t:get("other")
  end
  local e = summary.errors
  io.write(string.format(
    "KILN_LOAD requests=%d duration_us=%d p50_us=%d p99_us=%d max_us=%d s200=%d s429=%d other=%d " ..
    "connect=%d read=%d write=%d timeout=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), latency.max,
    a, b, o, e.connect, e.read, e.write, e.timeout))
end
