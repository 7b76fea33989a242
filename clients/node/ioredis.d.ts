// Types of the ioredis installer. They are written against the client's own
// type, so this file needs no import of ioredis.
import type { SeckillCommandSet, SeckillCommands, SeckillValues } from './index';

type Capitalized = { [K in keyof SeckillValues as `seckill${Capitalize<K & string>}`]: K };

/** The commands on a pipeline or transaction: each queues the call and returns the pipeline (no waits there). */
type Chain<P> = SeckillCommandSet<{ [K in keyof SeckillValues]: P }>;

/** An ioredis pipeline (or multi()) of a client with seckill installed. */
export type SeckillPipeline<P> = P & {
  readonly seckill: Chain<SeckillPipeline<P>>;
} & { [F in keyof Capitalized]: Chain<SeckillPipeline<P>>[Capitalized[F]] };

type PipelineOf<T> = T extends { pipeline(...args: any[]): infer P } ? P : never;

/** The client after installSeckill(client). */
export type WithSeckill<T> = Omit<T, 'pipeline' | 'multi'> & {
  /** The SECKILL.* commands, resolving to typed values (a Durable with a wait) and rejecting with SeckillError. */
  readonly seckill: SeckillCommands;
  pipeline(commands?: unknown[][]): SeckillPipeline<PipelineOf<T>>;
  multi(options: { pipeline: false }): Promise<'OK'>;
  multi(commands?: unknown[][], options?: { pipeline?: true }): SeckillPipeline<PipelineOf<T>>;
  multi(options: { pipeline?: true }): SeckillPipeline<PipelineOf<T>>;
} & { [F in keyof Capitalized]: SeckillCommands[Capitalized[F]] };

export interface InstallSeckillOptions {
  /** ioredis's Command class, when this package cannot require('ioredis') itself. */
  Command?: unknown;
}

/**
 * Registers the SECKILL.* commands on an ioredis Redis or Cluster: each is
 * keyed by its item key (Cluster routing, keyPrefix, auto-pipelining).
 * Returns the same client.
 */
export declare function installSeckill<T extends object>(client: T, options?: InstallSeckillOptions): WithSeckill<T>;
