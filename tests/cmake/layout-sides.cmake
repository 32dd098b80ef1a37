# The layout's promise (CONTRIBUTING.md, "Where things live"): the job's side
# (lib/coord/job, the interposer) includes no header of the coordinator
# (lib/coord/server) or of gpushare-ctl's client (lib/coord/ctl), and the
# vocabulary includes nothing of gpushare but itself.
function(check_includes dir pattern why)
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${dir}/*.cc ${SOURCE_DIR}/${dir}/*.h)
  foreach(source ${sources})
    file(STRINGS ${source} lines REGEX "^#include \"${pattern}")
    if(lines)
      file(RELATIVE_PATH shown ${SOURCE_DIR} ${source})
      message(SEND_ERROR "${shown}: ${lines}: ${why}")
    endif()
  endforeach()
endfunction()

check_includes(lib/coord/job "coord/(server|ctl)/" "the job side must not include the coordinator's or ctl's headers")
check_includes(lib/interpose "coord/(server|ctl)/" "the interposer must not include the coordinator's or ctl's headers")
check_includes(lib/coord/contract "coord/(server|ctl|job)/" "the contract depends on neither side")
check_includes(lib/vocab "(common|coord|interpose|simgpu|runner|place|probe|cudaapi)/" "the vocabulary depends on nothing of gpushare")
check_includes(lib/place "replay/" "placement never depends on trace replay (lib/replay uses lib/place, not the other way)")
check_includes(lib/replay "place/placer" "the replay decides with Algorithm 1's rules (place/antman_rules.h), never through the Placer")
