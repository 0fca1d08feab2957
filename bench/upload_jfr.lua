-- wrk script: every request POSTs one JFR recording to /ingest?format=jfr as
-- the Pyroscope Java agent does (multipart part jfr, gzipped; no labels part):
--   wrk -t1 -c8 -d20s --latency -s bench/upload_jfr.lua http://127.0.0.1:PORT -- FILE.jfr.gz SERVICE FROM UNTIL
-- FROM/UNTIL (unix seconds) put every upload in one known window, so that
-- the flame graph total over it tells how many uploads were stored.

-- done() is bench/upload.lua's (loaded first; init and request are replaced).
dofile((debug.getinfo(1, "S").source:sub(2):gsub("upload_jfr%.lua$", "upload.lua")))

local req

function init(args)
  local path, service, from, untl = args[1], args[2] or "wrk", args[3], args[4]
  local f = assert(io.open(path, "rb"))
  local jfr = f:read("*a")
  f:close()
  local boundary = "8d5c3b9e-2f41-4c1a-9a57-0b6f3d2e7c10"
  local body = "--" .. boundary .. "\r\nContent-Disposition: form-data; name=\"jfr\"; filename=\"jfr\"\r\n\r\n" ..
    jfr .. "\r\n--" .. boundary .. "--\r\n"
  local url = "/ingest?name=" .. service .. "&units=samples&aggregationType=sum&from=" .. from ..
    "&until=" .. untl .. "&spyName=javaspy&sampleRate=100&format=jfr"
  req = wrk.format("POST", url, { ["Content-Type"] = "multipart/form-data; boundary=" .. boundary }, body)
end

function request()
  return req
end
