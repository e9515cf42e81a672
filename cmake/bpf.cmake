# SPDX-License-Identifier: Apache-2.0
# BPF objects and their skeletons.  Needs BPF_CLANG and BPFTOOL.
#
# bpf_object(NAME SOURCE_DIR OUTPUT_DIR): SOURCE_DIR/NAME.bpf.c -> OUTPUT_DIR/NAME.bpf.o
#   -> OUTPUT_DIR/NAME.skel.h (struct hl_NAME_bpf); appends the skeleton to
#   BPF_SKELETONS in the caller's scope.
# bpf_skeletons(TARGET SOURCE_DIR OUTPUT_DIR NAME...): bpf_object for each NAME, and
#   TARGET, a custom target that builds their skeletons.
#
# Every object sees bpf/ and HOTLINE_BPF_ABI_DIR (hotline/model/abi.h); each depends on
# every header there and in its own SOURCE_DIR.

set(HOTLINE_BPF_ABI_DIR ${CMAKE_SOURCE_DIR}/include)
# The architecture's UAPI headers (asm/), for objects built on UAPI headers
# instead of vmlinux.h; searched after everything else.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(BPF_UAPI_ARCH_INCLUDE -idirafter /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
endif()

function(bpf_object name src_dir out_dir)
  set(src ${src_dir}/${name}.bpf.c)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  file(GLOB headers CONFIGURE_DEPENDS
    ${CMAKE_SOURCE_DIR}/bpf/*.h
    ${src_dir}/*.h
    ${HOTLINE_BPF_ABI_DIR}/hotline/model/*abi.h
    ${CMAKE_SOURCE_DIR}/bpf/vmlinux/x86/vmlinux.h)
  file(MAKE_DIRECTORY ${out_dir})
  add_custom_command(OUTPUT ${obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror
            -fdebug-prefix-map=${CMAKE_SOURCE_DIR}=.
            -I${CMAKE_SOURCE_DIR}/bpf/vmlinux/x86 -I${CMAKE_SOURCE_DIR}/bpf
            -I${HOTLINE_BPF_ABI_DIR} ${BPF_UAPI_ARCH_INCLUDE} -c ${src} -o ${obj}.tmp
    COMMAND ${BPFTOOL} gen object ${obj} ${obj}.tmp
    COMMAND ${CMAKE_COMMAND} -E remove ${obj}.tmp
    DEPENDS ${src} ${headers}
    COMMENT "BPF ${name}.bpf.o" VERBATIM)
  add_custom_command(OUTPUT ${skel}
    COMMAND sh -c "${BPFTOOL} gen skeleton ${obj} name hl_${name}_bpf > ${skel}.tmp && mv ${skel}.tmp ${skel}"
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h" VERBATIM)
  set(BPF_SKELETONS ${BPF_SKELETONS} ${skel} PARENT_SCOPE)
endfunction()

function(bpf_skeletons target src_dir out_dir)
  set(BPF_SKELETONS)
  foreach(name ${ARGN})
    bpf_object(${name} ${src_dir} ${out_dir})
  endforeach()
  add_custom_target(${target} DEPENDS ${BPF_SKELETONS})
endfunction()
