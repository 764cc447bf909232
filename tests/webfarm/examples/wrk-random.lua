-- wrk script: random host (h0..h99) and page (0..999) per request, against
-- examples/bench.toml. Usage (docs/bench/webfarm.md):
--   wrk -t1 -c32 -d10s -s wrk-random.lua http://127.0.0.1:PORT/
math.randomseed(1)
request = function()
  local h = math.random(0, 99)
  local p = math.random(0, 999)
  return wrk.format("GET", "/p/" .. p .. ".html",
                    { ["Host"] = "h" .. h .. ".farm.test" })
end
