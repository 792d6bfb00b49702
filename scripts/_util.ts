/**
 * Small file-system and network probes shared by the kit's scripts and tests.
 *
 * @module
 */

/** Whether a path exists (any kind of entry). */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Whether something accepts TCP connections on 127.0.0.1 at `port`. */
export async function canConnect(port: number): Promise<boolean> {
  try {
    const conn = await Deno.connect({ hostname: '127.0.0.1', port });
    conn.close();
    return true;
  } catch {
    return false;
  }
}
