# cmake -DSCDOC=... -DDIR=... -P scdoc.cmake: every DIR/*.scd through scdoc into DIR/NAME (roff).
file(GLOB pages "${DIR}/*.scd")
foreach(src ${pages})
  string(REGEX REPLACE "\\.scd$" "" out "${src}")
  execute_process(COMMAND ${SCDOC} INPUT_FILE ${src} OUTPUT_FILE ${out} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "scdoc failed on ${src}")
  endif()
endforeach()
