/// <reference types="node" />
// Types of the node-redis module. node-redis derives each method's signature
// from parseCommand's parameters (after the parser) and its value from
// transformReply's return type. A module call sends one command, so these
// take no wait: seckillOf(client) (in index.d.ts) gives the commands that do.
import type {
  SeckillKey, SeckillId, SeckillInt, SeckillTime, SeckillStocks,
  InitOptions, DeductOptions, StreamOptions, AddOptions, TakeOptions, ScanOptions, SeckillValues, OrderLine, OrderOptions,
  VariantOptions,
} from './index';

/** The part of node-redis's CommandParser that the commands use. */
interface Parser {
  push(...args: Array<string | Buffer>): void;
  pushKey(key: string | Buffer): void;
}

interface ModuleCommand<ARGS extends unknown[], VALUE> {
  readonly IS_READ_ONLY: boolean;
  parseCommand(this: void, parser: Parser, ...args: ARGS): void;
  transformReply(this: void, reply: any, preserve?: any, typeMapping?: any): VALUE;
}

type Commands = {
  init: ModuleCommand<[key: SeckillKey, stock: SeckillStocks, options?: InitOptions], SeckillValues['init']>;
  deduct: ModuleCommand<[key: SeckillKey, user: SeckillId, qty?: SeckillInt | DeductOptions, options?: DeductOptions], SeckillValues['deduct']>;
  confirm: ModuleCommand<[key: SeckillKey, requestId: SeckillId], SeckillValues['confirm']>;
  release: ModuleCommand<[key: SeckillKey, ...requestIds: Array<SeckillId | SeckillId[]>], SeckillValues['release']>;
  refund: ModuleCommand<[key: SeckillKey, requestId: SeckillId], SeckillValues['refund']>;
  order: ModuleCommand<[lines: readonly OrderLine[], user: SeckillId, requestId: SeckillId, options?: OrderOptions], SeckillValues['order']>;
  confirmOrder: ModuleCommand<[keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId], SeckillValues['confirmOrder']>;
  refundOrder: ModuleCommand<[keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId], SeckillValues['refundOrder']>;
  add: ModuleCommand<[key: SeckillKey, qty: SeckillInt, options?: AddOptions | SeckillId | null], SeckillValues['add']>;
  window: ModuleCommand<[key: SeckillKey, start: SeckillTime | null, end: SeckillTime | null], SeckillValues['window']>;
  stream: ModuleCommand<[key: SeckillKey, streamKey?: SeckillKey | null, options?: StreamOptions | SeckillInt], SeckillValues['stream']>;
  get: ModuleCommand<[key: SeckillKey, options?: VariantOptions], SeckillValues['get']>;
  bought: ModuleCommand<[key: SeckillKey, user: SeckillId, options?: VariantOptions], SeckillValues['bought']>;
  holds: ModuleCommand<[key: SeckillKey, user?: SeckillId | null], SeckillValues['holds']>;
  info: ModuleCommand<[key: SeckillKey, options?: VariantOptions], SeckillValues['info']>;
  status: ModuleCommand<[key: SeckillKey, requestId: SeckillId], SeckillValues['status']>;
  scan: ModuleCommand<[key: SeckillKey, cursor?: SeckillInt | null, options?: ScanOptions], SeckillValues['scan']>;
  take: ModuleCommand<[key: SeckillKey, qty: SeckillInt, transferId: SeckillId, to?: SeckillKey | TakeOptions | null], SeckillValues['take']>;
  settle: ModuleCommand<[key: SeckillKey, transferId: SeckillId], SeckillValues['settle']>;
  transfers: ModuleCommand<[key: SeckillKey], SeckillValues['transfers']>;
};

/** The module object: lower-case names, and upper-case aliases as node-redis's own modules have. */
export type SeckillModule = Readonly<Commands & { [K in keyof Commands as Uppercase<K & string>]: Commands[K] }>;

/** createClient({ modules: { seckill } }) / createCluster({ ..., modules: { seckill } }) */
export declare const seckill: SeckillModule;
