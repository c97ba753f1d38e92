-- OPTIONS /tokenize/<client>/<registration>, a CORS preflight without an Origin (204, nothing read or written):
-- the floor under every route the daemon answers on its Swift pool (the request's suspension, the hop to the
-- pool and the resume), on keep-alive connections.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

wrk.method = "OPTIONS"
wrk.path = "/tokenize/bench/floor"

done = report.done
