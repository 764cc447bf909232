# Runs `crawlctl url resolve` and `crawlctl url canon` on the input files in
# data/ and compares stdout byte for byte and the exit code.
# Usage: cmake -DCRAWLCTL=<path> -DDATA=<dir> -P crawlctl_url_test.cmake
function(check name expected_rc)
  execute_process(COMMAND ${CRAWLCTL} url ${ARGN}
                  INPUT_FILE ${DATA}/cli_${name}.in
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc TIMEOUT 60)
  file(READ ${DATA}/cli_${name}.out expected)
  if(NOT out STREQUAL expected)
    message(FATAL_ERROR "url ${name}: output differs\n--- got\n${out}--- expected\n${expected}")
  endif()
  if(NOT rc EQUAL ${expected_rc})
    message(FATAL_ERROR "url ${name}: exit code ${rc}, expected ${expected_rc}")
  endif()
endfunction()

check(resolve 1 resolve --base https://example.com/d/p)
check(canon 1 canon)

foreach(sub "" resolve canon)
  execute_process(COMMAND ${CRAWLCTL} url ${sub} --help
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc TIMEOUT 60)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "^usage: crawlctl url")
    message(FATAL_ERROR "url ${sub} --help: rc=${rc} out=${out}")
  endif()
endforeach()
execute_process(COMMAND ${CRAWLCTL} url resolve --bogus
                OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "url resolve --bogus: exit code ${rc}, expected 2")
endif()
