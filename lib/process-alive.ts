/** Whether process `pid` runs on this host (in this PID namespace): signal 0 checks without sending. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists, it is someone else's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
