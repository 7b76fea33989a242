// Types of the Valkey GLIDE installer. They are written against the shapes of
// GLIDE's own types, so this file needs no import of @valkey/valkey-glide.
import type { SeckillCommandSet, SeckillCommands, SeckillValues } from './index';

/** What the installer uses of a GLIDE GlideClient or GlideClusterClient. */
export interface GlideClientLike {
  customCommand(args: any[], options?: any): Promise<unknown>;
  exec(batch: any, raiseOnError: boolean, options?: any): Promise<unknown[] | null>;
}

/** What the installer uses of a GLIDE Batch or ClusterBatch. */
export interface GlideBatchLike {
  readonly isAtomic: boolean;
  customCommand(args: any[]): unknown;
}

/** A GLIDE batch after installSeckill(batch): each command queues the call and returns the batch (no waits there). */
export type WithSeckillBatch<B> = B & {
  readonly seckill: SeckillCommandSet<{ [K in keyof SeckillValues]: WithSeckillBatch<B> }>;
};

/** A GLIDE client after installSeckill(client). */
export type WithSeckillGlide<C> = C & {
  /**
   * The SECKILL.* commands, resolving to typed values (a Durable with a wait)
   * and rejecting with SeckillError; and exec(batch), GLIDE's exec with the
   * SECKILL commands' results typed (raiseOnError: true by default, as here
   * the first error is thrown; null when a transaction's WATCHed keys changed).
   */
  readonly seckill: SeckillCommands & {
    exec(batch: WithSeckillBatch<GlideBatchLike>, raiseOnError?: boolean, options?: object): Promise<unknown[] | null>;
  };
};

export interface InstallSeckillGlideOptions {
  /** The @valkey/valkey-glide module, when this package cannot require it itself (a wait builds a batch). */
  glide?: unknown;
}

/**
 * Gives a GLIDE batch (Batch, ClusterBatch) the SECKILL.* commands as
 * batch.seckill, queuing each call. Returns the same batch.
 */
export declare function installSeckill<B extends GlideBatchLike>(batch: B): WithSeckillBatch<B>;
/**
 * Gives a GLIDE client (GlideClient, GlideClusterClient) the SECKILL.*
 * commands as client.seckill: typed values and errors, orders routed to
 * their keys' master, waits. Returns the same client.
 */
export declare function installSeckill<C extends GlideClientLike>(client: C, options?: InstallSeckillGlideOptions): WithSeckillGlide<C>;
