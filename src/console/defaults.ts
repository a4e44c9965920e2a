/** Where the console listens unless told otherwise (its own module: the CLI reads it without loading the server). */

/** The console's default port (8787: clear of Temporal's 7233 / 8233 and the codec server). */
export const DEFAULT_CONSOLE_PORT = 8787;
/** The console's default interface: loopback only. */
export const DEFAULT_CONSOLE_HOST = '127.0.0.1';
