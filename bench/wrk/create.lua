-- Set-up for the tokenization-only runs (not a timed figure): creates card registrations
-- (POST /v2.01/{ClientId}/cardregistrations) as fast as the daemon takes them and writes one line per
-- registration to OUT_DIR/registrations-<thread>:
--   <Id>\t<CardRegistrationURL path>\t<AccessKey>\t<PreregistrationData>
-- Arguments: CLIENT_ID BEARER_TOKEN USER_ID OUT_DIR [idempotent]. Each line is flushed as it is written (wrk never
-- closes a thread's Lua state, so nothing may stay in a buffer). With `idempotent`, each request carries an
-- Idempotency-Key of its own (bench/tools/sweeper_idle_cpu.py --idempotent).
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup

local function field(body, name) return body:match('"' .. name .. '"%s*:%s*"([^"]*)"') end

local path, headers, body, out, idempotent, slice
local sent = 0

function init(args)
   path = "/v2.01/" .. args[1] .. "/cardregistrations"
   headers = { ["Authorization"] = "Bearer " .. args[2], ["Content-Type"] = "application/json" }
   body = '{"UserId":"' .. args[3] .. '","Currency":"EUR","CardType":"CB_VISA_MASTERCARD"}'
   slice = wrk.thread:get("slice")
   out = assert(io.open(args[4] .. "/registrations-" .. slice, "w"))
   idempotent = args[5] == "idempotent"
end

function request()
   if idempotent then
      sent = sent + 1
      headers["Idempotency-Key"] = string.format("bench-%s-%012d-%06d", slice, sent, math.random(0, 999999))
   end
   return wrk.format("POST", path, headers, body)
end

function response(status, headers, answer)
   if status ~= 200 then return end
   local id, key, data = field(answer, "Id"), field(answer, "AccessKey"), field(answer, "PreregistrationData")
   local url = field(answer, "CardRegistrationURL")
   local p = url and url:match("^https?://[^/]+(/.*)$")
   if id and key and data and p then
      out:write(id, "\t", p, "\t", key, "\t", data, "\n")
      out:flush()
   end
end

done = report.done
