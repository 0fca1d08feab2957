-- wrk script: every request POSTs one pprof file to /profiling/upload.
--   wrk -t1 -c8 -d20s --latency -s bench/upload.lua http://127.0.0.1:PORT -- FILE SERVICE FROM UNTIL
-- FROM/UNTIL (unix seconds) put every upload in one known window, so that
-- the flame graph total over it tells how many uploads were stored.
-- done() prints one machine-readable line: KILN_WRK key=value ...

local req

function init(args)
  local path, service, from, untl = args[1], args[2] or "wrk", args[3], args[4]
  local f = assert(io.open(path, "rb"))
  local body = f:read("*a")
  f:close()
  local url = "/profiling/upload?serviceName=" .. service
  if from then url = url .. "&from=" .. from .. "&until=" .. untl end
  req = wrk.format("POST", url, { ["Content-Type"] = "application/octet-stream" }, body)
end

function request()
  return req
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "KILN_WRK requests=%d duration_us=%d p50_us=%d p90_us=%d p99_us=%d max_us=%d mean_us=%.0f " ..
    "non2xx=%d connect=%d read=%d write=%d timeout=%d bytes=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), latency.max, latency.mean, e.status, e.connect, e.read, e.write, e.timeout,
    summary.bytes))
end
