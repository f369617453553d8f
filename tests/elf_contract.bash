# elf_contract.bash — what the apmint reader requires of a library file, checked the way it reads
# the file (its sections, relocations and dynamic symbols), for any architecture: the native
# variants (tests/variants.bats) and the aarch64 ones (tests/cross.bats) share these checks.
# Each function takes the library file; TLSDESC is R_X86_64_TLSDESC or R_AARCH64_TLSDESC.
# Every check ends in `|| return 1`: under bats' `run` a failing line would not stop the function.

# elf_tlsdesc LIB TLSDESC — R_*_TLSDESC relocations name both TLS pointers, nothing relaxes them
elf_tlsdesc() {
    local rel
    rel=$(readelf -rW "$1") || return 1
    grep -E "$2 +[0-9a-f]+ +elastic_apm_profiling_correlation_tls_v1 " <<<"$rel" || return 1
    grep -E "$2 +[0-9a-f]+ +otel_thread_ctx_v1 " <<<"$rel" || return 1
    # the dialects the reader cannot use: module/offset pairs and initial-exec offsets
    refute grep -E '(DTPMOD|DTPOFF|TPOFF|TLS_DTP|TLS_TP).*(correlation_tls_v1|otel_thread_ctx_v1)' <<<"$rel" || return 1
    # section headers are present (the reader walks SHT_RELA sections)
    [ "$(readelf -hW "$1" | awk '/Number of section headers/ {print $NF}')" -gt 0 ] || return 1
}

# elf_symbols LIB — the storage symbol is an 8-byte object, the TLS pointers 8-byte TLS, exported
elf_symbols() {
    local dyn
    dyn=$(readelf -sW --dyn-syms "$1" | sed -n "/Symbol table '.dynsym'/,/Symbol table '.symtab'/p") || return 1
    grep -E ' 8 OBJECT +GLOBAL +DEFAULT +[0-9]+ elastic_apm_profiling_correlation_process_storage_v1$' <<<"$dyn" || return 1
    grep -E ' 8 TLS +GLOBAL +DEFAULT +[0-9]+ elastic_apm_profiling_correlation_tls_v1$' <<<"$dyn" || return 1
    grep -E ' 8 TLS +GLOBAL +DEFAULT +[0-9]+ otel_thread_ctx_v1$' <<<"$dyn" || return 1
}

# elf_identity LIB LIBC — the reader's file name pattern, SONAME = file name, bound at load time,
# linked against the C library of its variant: glibc's libc.so.6; for musl no libc named at all
# (musl's is always in scope, and glibc's "libc.so" is a linker script that would stop a glibc
# program this library ends up in from starting)
elf_identity() {
    local base dyn
    base=$(basename "$1") || return 1
    [[ "$base" =~ ^elastic-jvmti-linux-[A-Za-z0-9_-]*\.so$ ]] || return 1
    dyn=$(readelf -dW "$1") || return 1
    grep -F "Library soname: [$base]" <<<"$dyn" || return 1
    grep -E 'FLAGS.*(BIND_NOW|NOW)' <<<"$dyn" || return 1
    if [ "$2" = musl ]; then
        [[ "$base" == *-musl-* ]] || return 1
        refute grep -F 'Shared library: [libc.so' <<<"$dyn" || return 1
    else
        grep -F 'Shared library: [libc.so.6]' <<<"$dyn" || return 1
    fi
}

# elf_exports LIB — the tracer API, the contract's symbols and the interposed libc functions
# (hooks/), nothing internal
elf_exports() {
    local exports extra f
    exports=$(nm -D --defined-only "$1" | awk '$2 ~ /[TDBV]/ {print $3}' | sed 's/@.*//' | sort) || return 1
    for f in proflink_set_trace proflink_set_traceparent proflink_clear_trace proflink_get_trace \
        proflink_set_message_callback proflink_end_transaction proflink_samples_delay_ms \
        proflink_host_id proflink_get_stats proflink_version proflink_init \
        proflink_set_context proflink_swap_context proflink_take_transactions \
        proflink_transactions_fd proflink_flush_transactions proflink_set_resource; do
        grep -qx "$f" <<<"$exports" || { echo "missing export $f"; return 1; }
    done
    # interposed: pthread_create, the exit/exec/setuid/seccomp/fork/wait hooks (hooks/), and what HTTP reading (hooks/http_io.c, hooks/fd_reuse.c, OpenSSL's calls in hooks/ssl_io.c) looks at
    local hooks='pthread_create|_exit|_Exit|execl|execle|execlp|execv|execve|execveat|execvp|execvpe|fexecve|fork|wait|waitpid|wait3|wait4|waitid|setuid|seteuid|setreuid|setresuid|setgid|setegid|setregid|setresgid|prctl|syscall|accept4?|read|readv|recv|recvfrom|recvmsg|close|close_range|closefrom|dup|dup2|dup3|fclose|fdopen|recvmmsg|send|sendto|sendmsg|sendmmsg|sendfile|sendfile64|splice|write|writev|epoll_p?wait|epoll_pwait2|p?poll|p?select|__(read|recv|recvfrom|poll)_chk|SSL_(read|read_ex|peek|peek_ex|write|write_ex|sendfile|free|clear|set_fd|set_rfd|set_wfd|set_bio|set0_rbio|set0_wbio)'
    extra=$(grep -vE "^(proflink_[a-z_]+|elastic_apm_profiling_correlation_(process_storage|tls)_v1|otel_thread_ctx_v1|$hooks|_init|_fini)\$" <<<"$exports" || true) || return 1
    [ -z "$extra" ] || { echo "unexpected exports: $extra"; return 1; }
}

# elf_resolvable LIB LIBC_FILE… — every undefined dynamic symbol of LIB is defined by one of the
# C library's files (a symbol the target libc lacks makes every program fail to start). Only
# default versions count: an unversioned reference never binds to a hidden compat version
# (name@VERSION, as glibc's pthread_atfork).
elf_resolvable() {
    local lib=$1 need have missing
    shift || return 1
    need=$(readelf -W --dyn-syms "$lib" | awk '$7 == "UND" && $8 != "" {print $8}' | sed 's/@.*//' | sort -u) || return 1
    have=$(for f in "$@"; do readelf -W --dyn-syms "$f" | awk '$7 != "UND" && $8 != "" && ($8 !~ /@/ || $8 ~ /@@/) {print $8}'; done |
        sed 's/@.*//' | sort -u)
    missing=$(comm -23 <(echo "$need") <(echo "$have")) || return 1
    # weak references may stay unresolved by design
    missing=$(for s in $missing; do
        readelf -W --dyn-syms "$lib" | awk -v s="$s" '$7 == "UND" && $5 == "GLOBAL" && $8 ~ "^"s"(@|$)" {print s; exit}'
    done)
    [ -z "$missing" ] || { echo "undefined, and not in the C library: $missing"; return 1; }
}
