# Build wrapper for tests: wait_for_two.sh LOG COMMAND... appends a line to LOG, waits (at
# most 3 s) until LOG has two lines — that is, until a second build of the same thing has
# started too, if one does — then runs COMMAND.
log=$1
shift
echo built >>"$log"
i=0
while [ "$(wc -l <"$log")" -lt 2 ] && [ $i -lt 30 ]; do
  sleep 0.1
  i=$((i + 1))
done
exec "$@"
