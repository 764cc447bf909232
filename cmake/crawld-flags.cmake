# Build options and per-target flags in one place (after ada's
# cmake/ada-flags.cmake).
option(CRAWLD_TESTS "Build unit and integration tests" ON)
option(CRAWLD_SANITIZE "Build with AddressSanitizer and UBSan" OFF)
option(CRAWLD_WERROR "Treat warnings as errors (CI)" OFF)
option(CRAWLD_FUZZ "Build libFuzzer targets (clang only)" OFF)
option(CRAWLD_BENCHMARKS "Build Google Benchmark micro-benchmarks" OFF)

if(CRAWLD_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

if(CRAWLD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CRAWLD_FUZZ needs clang (e.g. CXX=clang++-16)")
  endif()
  # Every library is instrumented for coverage; only fuzz targets link the
  # libFuzzer main.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# Warnings are PRIVATE to each of our targets, never pushed onto users.
function(crawld_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # g++ 12 at -O3 reports -Wrestrict on plain std::string concatenation
  # inside libstdc++ (GCC bug 105329, fixed in 13): a false positive that
  # -Werror would turn into a broken Release build.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND
     CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(CRAWLD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# crawld_library(<name> SOURCES ... [DEPS ...])
# Defines crawld_<name> with alias crawld::<name>. Headers are included as
# "<folder>/<header>.h" from the repository root.
function(crawld_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(crawld_${name} STATIC ${ARG_SOURCES})
  add_library(crawld::${name} ALIAS crawld_${name})
  target_include_directories(crawld_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(crawld_${name} PUBLIC ${ARG_DEPS})
  crawld_warnings(crawld_${name})
endfunction()

# crawld_test(<name> SOURCES ... DEPS ...): a GoogleTest binary whose tests
# are registered one by one with ctest.
function(crawld_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest
                        GTest::gtest_main GTest::gmock)
  crawld_warnings(${name})
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
                       PROPERTIES LABELS "unit;${ARG_LABELS}" TIMEOUT 300)
endfunction()

# crawld_fuzzer(<name> SOURCE file DEPS ...): with CRAWLD_FUZZ a libFuzzer
# binary; otherwise the same target linked with a seeded mutation driver that
# plain ctest runs for a bounded number of iterations.
function(crawld_fuzzer name)
  cmake_parse_arguments(ARG "" "SOURCE" "DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCE})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS})
  crawld_warnings(${name})
  if(CRAWLD_FUZZ)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  else()
    target_sources(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/fuzz/driver.cc)
    add_test(NAME fuzz.${name}
             COMMAND ${name} ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
    set_tests_properties(fuzz.${name} PROPERTIES LABELS "fuzz" TIMEOUT 300)
  endif()
endfunction()
