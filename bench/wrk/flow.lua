-- The card registration flow end to end, as a merchant backend and a shopper's browser drive it, on one
-- keep-alive connection per wrk thread (wrk -tN -cN: each thread's Lua state follows its one connection):
--   1. POST /v2.01/{ClientId}/cardregistrations (bearer)      -> Id, AccessKey, PreregistrationData, URL
--   2. POST {CardRegistrationURL path} (tokenization form)     -> data=...
--   3. PUT  /v2.01/{ClientId}/cardregistrations/{Id}           -> CardId
--   4. GET  /v2.01/{ClientId}/cards/{CardId}                   -> the card
-- then again. Arguments: CLIENT_ID BEARER_TOKEN USER_ID. A wrong answer counts as refused and restarts
-- the flow. The card is the published Mangopay sandbox card.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup

local function field(body, name) return body:match('"' .. name .. '"%s*:%s*"([^"]*)"') end

local api, user
local json_headers, get_headers
local form_headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
local step = 1
local reg = {}
local flows, refused = 0, 0

function init(args)
   api = "/v2.01/" .. args[1]
   user = args[3]
   json_headers = { ["Authorization"] = "Bearer " .. args[2], ["Content-Type"] = "application/json" }
   get_headers = { ["Authorization"] = "Bearer " .. args[2] }
end

function request()
   if step == 1 then
      return wrk.format("POST", api .. "/cardregistrations", json_headers,
         '{"UserId":"' .. user .. '","Currency":"EUR","CardType":"CB_VISA_MASTERCARD"}')
   elseif step == 2 then
      return wrk.format("POST", reg.path, form_headers, "data=" .. reg.data .. "&accessKeyRef=" .. reg.key
         .. "&cardNumber=4970107111111119&cardExpirationDate=1229&cardCvx=123")
   elseif step == 3 then
      return wrk.format("PUT", api .. "/cardregistrations/" .. reg.id, json_headers,
         '{"RegistrationData":"' .. reg.answer .. '"}')
   end
   return wrk.format("GET", api .. "/cards/" .. reg.card, get_headers)
end

function response(status, headers, body)
   if status == 200 then
      if step == 1 then
         reg.id, reg.key, reg.data = field(body, "Id"), field(body, "AccessKey"), field(body, "PreregistrationData")
         local url = field(body, "CardRegistrationURL")
         reg.path = url and url:match("^https?://[^/]+(/.*)$")
         if reg.id and reg.key and reg.data and reg.path then step = 2 return end
      elseif step == 2 then
         if body:sub(1, 5) == "data=" then reg.answer = body step = 3 return end
      elseif step == 3 then
         reg.card = field(body, "CardId")
         if reg.card then step = 4 return end
      elseif field(body, "Id") == reg.card then
         flows = flows + 1
         wrk.thread:set("flows", flows)
         step = 1
         return
      end
   end
   refused = refused + 1
   wrk.thread:set("refused", refused)
   step = 1
end

function done(summary, latency, requests)
   report.extra = string.format(',"completed":%d,"refused":%d', report.total("flows"), report.total("refused"))
   report.done(summary, latency, requests)
end
