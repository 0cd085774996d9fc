/** A writable stream that keeps what a command printed, for the tests to read. */
import { Writable } from 'node:stream';

export function textSink(): Writable & { text: () => string } {
  let text = '';
  const w = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return Object.assign(w, { text: () => text });
}
