declare module 'dynalite' {
  import type { Server } from 'node:http';

  interface DynaliteOptions {
    /** ms a CreateTable takes to become ACTIVE (0 = at once). */
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    /** Directory for a LevelDB store; in memory when absent. */
    path?: string;
  }
  function dynalite(options?: DynaliteOptions): Server;
  export default dynalite;
}
