-- wrk script: send requests in absolute-form, as a client of an explicit proxy does.
-- ORIGIN is "host:port" of the origin behind the proxy.
local origin = os.getenv("ORIGIN")
request = function()
  return wrk.format("GET", "http://" .. origin .. "/small", { ["Host"] = origin })
end
