-- A fixed POST on keep-alive connections. Arguments: the Authorization header value ("-" for none) and the JSON
-- body. The forward suite posts the same body shape to CardVault's /forward (placeholders) and to the receiver
-- directly (the number written out).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup
done = report.done

function init(args)
   wrk.method = "POST"
   wrk.headers["Content-Type"] = "application/json"
   if args[1] and args[1] ~= "-" then wrk.headers["Authorization"] = args[1] end
   wrk.body = args[2] or ""
end
