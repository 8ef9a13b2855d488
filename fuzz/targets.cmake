# The one list of libFuzzer targets: fuzz/<name>.cpp each. fuzz/CMakeLists.txt
# builds them (clang, -DKWIRE_FUZZ=ON) and writes the list to
# <build>/fuzz/targets.txt, which scripts/fuzz runs; tests/CMakeLists.txt
# compiles the same harnesses into fuzz_replay_test, which replays the seed
# corpora and the kept findings (fuzz/regressions/) in the unit suite.
set(KWIRE_FUZZ_TARGETS
  fuzz_response
  fuzz_group_messages
  fuzz_admin_messages
  fuzz_share_messages
  fuzz_txn_messages
  fuzz_record_batch
  fuzz_legacy_messages
  fuzz_decompress
  fuzz_offsets_json
  fuzz_source_options
  fuzz_checkpoint
  fuzz_value_format
  fuzz_sasl
  fuzz_avro
  fuzz_protobuf
  fuzz_json_rows)

# Every fuzz/fuzz_*.cpp must be in the list: a harness left out would never run.
file(GLOB _kwire_fuzz_sources RELATIVE ${CMAKE_CURRENT_LIST_DIR} ${CMAKE_CURRENT_LIST_DIR}/fuzz_*.cpp)
foreach(_src ${_kwire_fuzz_sources})
  string(REGEX REPLACE "\\.cpp$" "" _name ${_src})
  if(NOT _name IN_LIST KWIRE_FUZZ_TARGETS)
    message(FATAL_ERROR "fuzz/${_src} is not in KWIRE_FUZZ_TARGETS (fuzz/targets.cmake)")
  endif()
endforeach()
