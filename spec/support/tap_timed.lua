-- busted output handler: TAP, as tools/run_specs.sh reads it, plus the
-- wall time of each spec file. At the end it prints the slowest files as
-- TAP comments, so a CI log says where a stage's minutes went (the CI
-- budget is tight; the sanitizer stages multiply every file's time).
return function(options)
  local busted = require("busted")
  local handler = require("busted.outputHandlers.TAP")(options)
  local times, started = {}, nil

  busted.subscribe({ "file", "start" }, function(file)
    started = os.time()
    return nil, true
  end)
  busted.subscribe({ "file", "end" }, function(file)
    if started then times[#times + 1] = { name = file.name, secs = os.time() - started } end
    return nil, true
  end)
  busted.subscribe({ "suite", "end" }, function()
    table.sort(times, function(a, b) return a.secs > b.secs end)
    io.write("# slowest spec files (wall seconds):\n")
    for i = 1, math.min(15, #times) do
      io.write(("#   %5d  %s\n"):format(times[i].secs, times[i].name))
    end
    io.flush()
    return nil, true
  end)
  return handler
end
