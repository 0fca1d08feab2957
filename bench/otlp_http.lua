-- wrk script: every request POSTs one OTLP ExportProfilesServiceRequest
-- (protobuf) to /v1development/profiles on the otlp_http listener.
--   wrk -t1 -c8 -d20s --latency -s bench/otlp_http.lua http://127.0.0.1:PORT -- FILE.pb
-- done() prints one machine-readable line: KILN_WRK key=value ...

local req

function init(args)
  local f = assert(io.open(args[1], "rb"))
  local body = f:read("*a")
  f:close()
  req = wrk.format("POST", "/v1development/profiles", { ["Content-Type"] = "application/x-protobuf" }, body)
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
