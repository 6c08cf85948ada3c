// Writing to a file descriptor from the engine's worker thread, which never returns to an event loop.
// Node makes a pipe on stdout or stderr non-blocking, so a write to a full pipe (a parent that reads
// slowly, as on a busy machine) fails with EAGAIN instead of waiting; it is retried here until the
// reader has made room, so log lines are neither lost nor turned into a failed engine call.
import { writeSync } from 'node:fs';

const pause = new Int32Array(new SharedArrayBuffer(4));

/** Writes all of `text` to `fd`, waiting 1 ms at a time while the pipe is full. */
export function writeAll(fd, text, write = writeSync) {
  let rest = Buffer.from(text);
  while (rest.length > 0) {
    try {
      rest = rest.subarray(write(fd, rest));
    } catch (e) {
      if (e.code !== 'EAGAIN') throw e;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}
