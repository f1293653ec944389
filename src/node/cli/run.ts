// Entry point of the `weir` bin: runs the command line on this process's arguments and exits with its code.
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`weir: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exitCode = 1;
  },
);
