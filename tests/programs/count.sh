# Build wrapper for tests: count.sh LOG COMMAND... appends a line to LOG, then runs COMMAND.
# It also prints a ptxas report of a kernel that spills, which would fail a config's build
# (a harness is not judged by the ptxas limits).
log=$1
shift
echo built >>"$log"
printf "ptxas info    : Function properties for fake\n    0 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n" >&2
exec "$@"
