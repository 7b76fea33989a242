/// <reference types="node" />
// Types of seckill-client (hand-written; the package is plain JavaScript).

// ---- arguments ----------------------------------------------------------

/** A key: a string or a Buffer. */
export type SeckillKey = string | Buffer;
/** A user or request id (1 to 128 bytes): numbers and BigInts are sent as decimal strings. */
export type SeckillId = string | Buffer | number | bigint;
/** An integer: a safe-integer number, a BigInt, or a decimal string. */
export type SeckillInt = number | bigint | string;
/** A Unix time in milliseconds (or in seconds for `exat`), or a Date. */
export type SeckillTime = SeckillInt | Date;
/** An item's stock: an integer, or UNLIMITED (also "UNLIMITED", Infinity). */
export type SeckillStock = SeckillInt | typeof UNLIMITED;
/** A variant's name (1 to 64 bytes): a string or a Buffer; a number (a size such as 42) is sent as its decimal text. */
export type SeckillVariant = string | Buffer | number | bigint;
/**
 * The variants of an item and a value for each (its stock, or its own cap):
 * a plain object, or a Map (which keeps its order, and may have Buffer or
 * number names).
 */
export type VariantTable<V> = { readonly [name: string]: V } | ReadonlyMap<SeckillVariant, V>;
/**
 * `init`'s stock: one stock, or the stocks of the item's variants (sent as
 * `VARIANTS numvariants name stock ...`), sold under the item's one LIMIT
 * across them.
 */
export type SeckillStocks = SeckillStock | VariantTable<SeckillStock>;

export interface InitOptions {
  /** Most units one user may hold at once (on an item with variants: across them); 0 or absent = no cap. */
  limit?: SeckillInt;
  /** An item with variants: a cap of a variant's own besides `limit` (VARIANTLIMIT name n), by variant name. */
  variantLimits?: VariantTable<SeckillInt>;
  /** Start of the sale, Unix ms (or a Date). */
  start?: SeckillTime;
  /** End of the sale, Unix ms (or a Date). */
  end?: SeckillTime;
  /** The order stream's key (same hash tag as the item). keyPrefix applies to it too. */
  stream?: SeckillKey;
  /** Entries the order stream keeps; 0 = all. */
  maxlen?: SeckillInt;
  /** Time to live in seconds (only when created or replaced). */
  ex?: SeckillInt;
  /** Time to live in milliseconds. */
  px?: SeckillInt;
  /** Expiry as a Unix time in seconds (or a Date). */
  exat?: SeckillTime;
  /** Expiry as a Unix time in milliseconds (or a Date). */
  pxat?: SeckillTime;
  /** Start the item over if it exists. */
  replace?: boolean;
}

export interface DeductOptions {
  /** Units to buy (default 1); may also be given as the third argument. */
  qty?: SeckillInt;
  /** Records the purchase under this id: a retry gets the same reply and buys nothing. */
  requestId?: SeckillId;
  /** Reserve the units for this many seconds (needs requestId); the result then has the hold's `deadline`. */
  hold?: SeckillInt;
  /** Reserve the units until this Unix time in ms, or Date (needs requestId); the result then has the hold's `deadline`. */
  holdUntil?: SeckillTime;
  /**
   * The variant to buy, on an item with variants (required there; refused on
   * an item without): SOLD_OUT is that variant's stock, LIMIT_REACHED the
   * item's limit across variants or the variant's own.
   */
  variant?: SeckillVariant;
}

/** The reads of an item with variants: the whole item (figures added up), or one variant. */
export interface VariantOptions {
  /** The variant to report, on an item with variants; absent: the whole item. */
  variant?: SeckillVariant;
}

/** One line of an order: `[key, qty]` or `{ key, qty }` (qty 1 when left out). */
/** A line of an order or cart; `variant` names the variant bought of an item with variants. */
export type OrderLine =
  | readonly [key: SeckillKey, qty?: SeckillInt, variant?: SeckillId | null]
  | { readonly key: SeckillKey; readonly qty?: SeckillInt; readonly variant?: SeckillId | null };

export interface OrderOptions {
  /** Hold every line for this many seconds; the result then has the order's `deadline`. */
  hold?: SeckillInt;
  /** Hold every line until this Unix time in ms, or Date; the result then has the order's `deadline`. */
  holdUntil?: SeckillTime;
}

/**
 * A wait for replicas after `deduct`, `confirm` or `refund`: WAIT sent right
 * after the command, on its connection (in a cluster, the item key's master).
 * Not in pipelines or transactions.
 */
export interface WaitOptions {
  /** Replicas that must acknowledge the write (WAIT's numreplicas); the call then resolves to a Durable. */
  waitReplicas: number | bigint;
  /** How long WAIT may block, in milliseconds (default 1000; 0 waits for ever, as WAIT does). */
  waitTimeoutMs?: number | bigint;
}

export interface StreamOptions {
  maxlen?: SeckillInt;
}

export interface AddOptions {
  /**
   * Receives units moved from another part (SECKILL.ADD ... ID): added once
   * per transfer id; a retry adds nothing and gets the same reply.
   */
  transferId?: SeckillId;
  /** The variant restocked, or receiving the moved units with a transferId (SECKILL.ADD ... VARIANT). */
  variant?: SeckillVariant;
}

export interface TakeOptions {
  /** The part the units go to (recorded with the transfer). keyPrefix applies to it too. */
  to?: SeckillKey | null;
  /** The variant the units come out of, on an item with variants (SECKILL.TAKE ... VARIANT). */
  variant?: SeckillVariant;
}

export interface SettleOptions {
  /** The variant that gave the transfer out, on an item with variants. */
  variant?: SeckillVariant;
}

// ---- values -------------------------------------------------------------

/** Pass as `init`'s stock for an item that never runs out. */
export declare const UNLIMITED: 'UNLIMITED';
/**
 * The stock reported for an UNLIMITED item, as a number: 9223372036854775807
 * has no exact double, so this is the nearest one (2 ** 63), the same value
 * node-redis and ioredis parse that reply to. Compare with `===`.
 */
export declare const UNLIMITED_STOCK: number;
/** The exact sentinel the server sends, 9223372036854775807n. */
export declare const UNLIMITED_STOCK_BIGINT: bigint;

export declare const Outcome: Readonly<{
  BOUGHT: 'BOUGHT';
  SOLD_OUT: 'SOLD_OUT';
  LIMIT_REACHED: 'LIMIT_REACHED';
  NO_ITEM: 'NO_ITEM';
  CANCELLED: 'CANCELLED';
  NOT_STARTED: 'NOT_STARTED';
  ENDED: 'ENDED';
}>;
/** The outcome of `deduct` (there is no "replayed": a retry gets the first reply). */
export type Outcome = (typeof Outcome)[keyof typeof Outcome];

/**
 * The outcome of `confirm`. `confirm` sends DETAIL, so a hold that is gone
 * comes back as REFUNDED, LAPSED or UNKNOWN_REQUEST; CANCELLED is what a
 * CONFIRM sent without DETAIL (a raw call) answers for all three.
 */
export declare const ConfirmOutcome: Readonly<{
  /** The pending hold is a final purchase now. */
  CONFIRMED: 'CONFIRMED';
  /** It was final already: confirmed before, or bought without a hold. */
  ALREADY_FINAL: 'ALREADY_FINAL';
  /** Without DETAIL: refunded, lapsed, or an unknown request id. */
  CANCELLED: 'CANCELLED';
  NO_ITEM: 'NO_ITEM';
  /** The purchase was refunded. */
  REFUNDED: 'REFUNDED';
  /** The hold lapsed unconfirmed: its units went back on sale. */
  LAPSED: 'LAPSED';
  /** The item never saw this request id. */
  UNKNOWN_REQUEST: 'UNKNOWN_REQUEST';
}>;
export type ConfirmOutcome = (typeof ConfirmOutcome)[keyof typeof ConfirmOutcome];

/**
 * The outcome of `refund`. `refund` sends DETAIL, so a refund that gives
 * nothing back says why (ALREADY_REFUNDED, LAPSED, UNKNOWN_REQUEST);
 * NOTHING is what a REFUND sent without DETAIL (a raw call) answers for all three.
 */
export declare const RefundOutcome: Readonly<{
  /** The units were given back (how many: `units`). */
  REFUNDED: 'REFUNDED';
  /** Without DETAIL: an unknown request id, one refunded already, or a hold that lapsed. */
  NOTHING: 'NOTHING';
  NO_ITEM: 'NO_ITEM';
  /** Refunded before: its units went back then. */
  ALREADY_REFUNDED: 'ALREADY_REFUNDED';
  /** The hold lapsed unconfirmed, and its units went back then. */
  LAPSED: 'LAPSED';
  /** The item never saw this request id. */
  UNKNOWN_REQUEST: 'UNKNOWN_REQUEST';
}>;
export type RefundOutcome = (typeof RefundOutcome)[keyof typeof RefundOutcome];

export declare const SettleOutcome: Readonly<{
  /** The transfer was open and is closed now. */
  SETTLED: 'SETTLED';
  /** It was closed before. */
  ALREADY_SETTLED: 'ALREADY_SETTLED';
  /** No such transfer was given out by this part. */
  UNKNOWN: 'UNKNOWN';
  NO_ITEM: 'NO_ITEM';
}>;
export type SettleOutcome = (typeof SettleOutcome)[keyof typeof SettleOutcome];

/** What `deduct` returns. */
export declare class DeductResult {
  private constructor();
  readonly outcome: Outcome;
  /** Remaining stock after the purchase when BOUGHT (UNLIMITED_STOCK for an unlimited item), else null. */
  readonly stock: number | null;
  /**
   * The hold's deadline, Unix milliseconds, when the call made a hold (or
   * replayed one still pending), else null: a purchase without a hold, a
   * refusal, a hold confirmed or gone since.
   */
  readonly deadline: number | null;
  /** outcome === BOUGHT */
  readonly ok: boolean;
  /** outcome === BOUGHT */
  readonly bought: boolean;
}

/** What `refund` returns. */
export declare class RefundResult {
  private constructor();
  readonly outcome: RefundOutcome;
  /** The units given back (1 or more) when REFUNDED, else null. */
  readonly units: number | null;
  /** outcome === REFUNDED */
  readonly ok: boolean;
  /** outcome === REFUNDED */
  readonly refunded: boolean;
}

/** What `order` returns (SECKILL.MDEDUCT): every line taken, or none. */
export declare class OrderResult {
  private constructor();
  /** True when every line was taken (bought, or held until `deadline`). */
  readonly taken: boolean;
  /**
   * One entry per line, in order: a DeductResult (BOUGHT with the item's
   * remaining stock when taken; the line's refusal when refused), or null
   * for a line that would have been taken but was not, because another line
   * refused the order.
   */
  readonly lines: ReadonlyArray<DeductResult | null>;
  /** The one deadline of every line's hold, Unix ms, when the call made a hold (or replayed one still pending), else null. */
  readonly deadline: number | null;
  /** Same as `taken`. */
  readonly ok: boolean;
}

/** What `confirmOrder` returns (SECKILL.MCONFIRM): every line confirmed, or none. */
export declare class OrderConfirmation {
  private constructor();
  /** True when every line is final now (CONFIRMED, or ALREADY_FINAL). */
  readonly confirmed: boolean;
  /**
   * One entry per key, in order: its ConfirmOutcome, or null for a line that
   * could have been confirmed but was not, because another line refused
   * (REFUNDED, LAPSED, UNKNOWN_REQUEST or NO_ITEM).
   */
  readonly lines: ReadonlyArray<ConfirmOutcome | null>;
  /** Same as `confirmed`. */
  readonly ok: boolean;
}

/**
 * What `deduct`, `confirm` and `refund` resolve to with a wait: the command's
 * usual value, and how many replicas acknowledged the write.
 */
export declare class Durable<T = unknown> {
  private constructor();
  /** The command's usual value (DeductResult, ConfirmOutcome, RefundResult). */
  readonly result: T;
  /** What WAIT answered: the replicas that acknowledged the write. */
  readonly replicas: number;
  /** `replicas >= waitReplicas`: false means the write could still be lost in a failover (send it again). */
  readonly durable: boolean;
}

/** A pending hold. Ids are strings, or Buffers when they are not valid UTF-8. */
export declare class Hold {
  private constructor();
  readonly requestId: string | Buffer;
  readonly user: string | Buffer;
  readonly qty: number;
  /** Unix milliseconds. */
  readonly deadline: number;
  /** The variant held, on an item with variants; null on an item without. */
  readonly variant: string | Buffer | null;
}

/** A transfer given out by `take` and not settled yet. Ids are strings, or Buffers when they are not valid UTF-8. */
export declare class Transfer {
  private constructor();
  readonly transferId: string | Buffer;
  readonly units: number;
  /** The part the units go to, as `take` named it (keyPrefix removed), or null if none was given. */
  readonly destination: string | Buffer | null;
  /** The variant the units came out of, on an item with variants; else null. */
  readonly variant: string | Buffer | null;
}

/** The status of a request id, as `scan` reports it (the server's word). */
export declare const RequestStatus: Readonly<{
  /** Bought without a hold. */
  PURCHASED: 'purchased';
  /** A pending hold. */
  HELD: 'held';
  /** A hold that was confirmed. */
  CONFIRMED: 'confirmed';
  REFUNDED: 'refunded';
  /** A hold whose deadline passed unconfirmed (released or not yet). */
  LAPSED: 'lapsed';
  /** The item never saw this request id (`status` only). */
  UNKNOWN: 'unknown';
}>;
export type RequestStatus = (typeof RequestStatus)[keyof typeof RequestStatus];

/** Where one purchase stands, as `status` reports it. The user is a string, or a Buffer when it is not valid UTF-8. */
export declare class OrderState {
  private constructor();
  readonly status: RequestStatus;
  /** The buyer; null when the status is UNKNOWN. */
  readonly user: string | Buffer | null;
  /** The units; 0 when UNKNOWN. */
  readonly qty: number;
  /** A hold's deadline, Unix milliseconds; 0 for a purchase made without a hold. */
  readonly deadline: number;
  /** The variant bought, on an item with variants (null there when UNKNOWN); null on an item without. */
  readonly variant: string | Buffer | null;
}

/** A buyer, as `scan` lists it. The user is a string, or a Buffer when it is not valid UTF-8. */
export declare class BuyerRecord {
  private constructor();
  readonly type: 'buyer';
  readonly user: string | Buffer;
  /** The units it holds now, as `bought` reports them (0 once it gave everything back). */
  readonly units: number;
}

/** A purchase made with a request id, as `scan` lists it. Ids are strings, or Buffers when they are not valid UTF-8. */
export declare class RequestRecord {
  private constructor();
  readonly type: 'request';
  readonly requestId: string | Buffer;
  readonly user: string | Buffer;
  readonly qty: number;
  readonly status: RequestStatus;
  /** The hold's deadline, Unix milliseconds; 0 for a purchase made without a hold. */
  readonly deadline: number;
}

/** One record of `scan`: tell them apart by `type`. */
export type ScanRecord = BuyerRecord | RequestRecord;

/** One page of `scan`. */
export declare class ScanPage {
  private constructor();
  /** The cursor of the next page, a decimal string; '0' when the scan is over. */
  readonly cursor: string;
  readonly records: ScanRecord[];
}

export interface ScanOptions {
  /** Records a call: 10 by default, 10,000 at most. */
  count?: SeckillInt;
  /** The variant whose records to walk: required on an item with variants (each is scanned apart). */
  variant?: SeckillVariant;
}

/** An item's counters (SECKILL.INFO), the same under RESP2 and RESP3. */
export declare class ItemInfo {
  private constructor();
  readonly stock: number;
  readonly unlimited: boolean;
  readonly limit: number;
  readonly initial: number;
  readonly added: number;
  readonly sold: number;
  readonly refunded: number;
  readonly held: number;
  readonly holds: number;
  readonly expired: number;
  readonly buyers: number;
  readonly requests: number;
  readonly start: number;
  readonly end: number;
  /** The order stream's key as the caller named it (keyPrefix removed), or null. */
  readonly stream: string | Buffer | null;
  readonly streamMaxlen: number;
  /** Units ever taken out by `take` (moved to other parts); 0 from a module without transfers. */
  readonly movedOut: number;
  /** Units ever received by `add` with a transferId; 0 from a module without transfers. */
  readonly movedIn: number;
  /**
   * False when the order stream came with a RESTORE and no user allowed to
   * write it has confirmed it yet, or there is none; true from a module
   * older than that check.
   */
  readonly streamConfirmed: boolean;
  /** How many variants the item sells (its other counters then add theirs up); 0 for an item without. */
  readonly variants: number;
}

// ---- errors -------------------------------------------------------------

export declare const ErrorKind: Readonly<{
  REQUEST_ID_CONFLICT: 'REQUEST_ID_CONFLICT';
  ORDER_STREAM: 'ORDER_STREAM';
  ITEM_FULL: 'ITEM_FULL';
  WRONG_TYPE: 'WRONG_TYPE';
  NO_PERMISSION: 'NO_PERMISSION';
  INVALID_ARGUMENT: 'INVALID_ARGUMENT';
  UNAVAILABLE: 'UNAVAILABLE';
}>;
export type ErrorKind = (typeof ErrorKind)[keyof typeof ErrorKind];

/** Base class of the errors SECKILL.* commands reply with, and of UnavailableError. */
export declare class SeckillError extends Error {
  constructor(message: string, options?: { code?: string; kind?: ErrorKind; cause?: unknown });
  /**
   * The leading word of the reply: "ERR", "WRONGTYPE", "NOPERM", "TRYAGAIN",
   * "NOREPLICAS", ...; "" for a connection lost during the call.
   */
  readonly code: string;
  readonly kind: ErrorKind;
  /** The same call may succeed if sent again (code TRYAGAIN, or kind UNAVAILABLE). */
  readonly retryable: boolean;
  /** The typed error for an error reply's text ("CODE message"). */
  static fromReplyText(text: string, cause?: unknown): SeckillError | null;
  /**
   * The typed error for a node-redis or ioredis error reply, or an
   * UnavailableError for the error a client gives a call whose connection
   * was lost; anything else (already typed, a client closed on purpose,
   * ...) is returned unchanged.
   */
  static from<T>(err: T): T | SeckillError;
}
export declare class RequestIdConflictError extends SeckillError {}
export declare class OrderStreamError extends SeckillError {}
export declare class ItemFullError extends SeckillError {}
export declare class WrongTypeError extends SeckillError {}
export declare class NoPermissionError extends SeckillError {}
export declare class InvalidArgumentError extends SeckillError {}
/**
 * The server could not take the write now (code NOREPLICAS, READONLY,
 * MASTERDOWN or LOADING: nothing changed), or the connection was lost
 * during the call (code "": the write may or may not have happened). Always
 * retryable: send the same call again, to the current master.
 */
export declare class UnavailableError extends SeckillError {}

// ---- the commands ------------------------------------------------------------

/** The SECKILL.* commands, each returning R<its value>. */
export interface SeckillCommandSet<R extends { [K in keyof SeckillValues]: unknown }> {
  /**
   * SECKILL.INIT: true if created (or replaced), false if it existed. `stock`
   * may be an object or Map of variant name to stock: an item with variants.
   */
  init(key: SeckillKey, stock: SeckillStocks, options?: InitOptions): R['init'];
  /** SECKILL.DEDUCT: sells `qty` (default 1) units to `user` (with a hold, the result has its `deadline`; `variant` on an item with variants). */
  deduct(key: SeckillKey, user: SeckillId, qty?: SeckillInt | DeductOptions, options?: DeductOptions): R['deduct'];
  /** SECKILL.CONFIRM (with DETAIL): makes a pending hold final, or says why it cannot (refunded, lapsed, unknown id). */
  confirm(key: SeckillKey, requestId: SeckillId): R['confirm'];
  /** SECKILL.RELEASE: lets the named holds lapse now; how many did; null if no item. */
  release(key: SeckillKey, ...requestIds: Array<SeckillId | SeckillId[]>): R['release'];
  /** SECKILL.REFUND (with DETAIL): gives the units back; the outcome says why nothing was (already refunded, lapsed, unknown id, no item). */
  refund(key: SeckillKey, requestId: SeckillId): R['refund'];
  /**
   * SECKILL.MDEDUCT: an order of several items for `user` under one request
   * id, every line or none, in one step on one node (the keys must share a
   * hash tag in a cluster). With a hold, the result has its `deadline`.
   */
  order(lines: readonly OrderLine[], user: SeckillId, requestId: SeckillId, options?: OrderOptions): R['order'];
  /** SECKILL.MCONFIRM (with DETAIL): confirms every line of an order, or none. `keys` may be the order's lines. */
  confirmOrder(keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId): R['confirmOrder'];
  /** SECKILL.MREFUND (with DETAIL): refunds every line of an order that can be; a RefundResult per key. `keys` may be the order's lines. */
  refundOrder(keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId): R['refundOrder'];
  /** SECKILL.ADD: the new stock (with a transferId, once per id; a retry: the same reply; with a variant, that variant's); null if no item. */
  add(key: SeckillKey, qty: SeckillInt, options?: AddOptions | SeckillId | null): R['add'];
  /** SECKILL.WINDOW (0 or null = open side): true; null if no item. */
  window(key: SeckillKey, start: SeckillTime | null, end: SeckillTime | null): R['window'];
  /** SECKILL.STREAM: sets (or, without a stream key, clears) the order stream; true; null if no item. */
  stream(key: SeckillKey, streamKey?: SeckillKey | null, options?: StreamOptions | SeckillInt): R['stream'];
  /** SECKILL.GET: remaining stock (of an item with variants: theirs added up, or the variant's); null if no item. */
  get(key: SeckillKey, options?: VariantOptions): R['get'];
  /** SECKILL.BOUGHT: units the user holds now (across variants, or of the variant); null if no item. */
  bought(key: SeckillKey, user: SeckillId, options?: VariantOptions): R['bought'];
  /** SECKILL.HOLDS: pending holds, earliest deadline first; null if no item. */
  holds(key: SeckillKey, user?: SeckillId | null): R['holds'];
  /** SECKILL.INFO: the item's counters (of an item with variants: theirs added up, or the variant's); null if no item. */
  info(key: SeckillKey, options?: VariantOptions): R['info'];
  /** SECKILL.STATUS: where the purchase under `requestId` stands (status UNKNOWN if the item never saw it); null if no item. */
  status(key: SeckillKey, requestId: SeckillId): R['status'];
  /**
   * SECKILL.SCAN: one page of the item's records from `cursor` ('0', the
   * default, starts a scan); a missing item gives cursor '0' and no records.
   * An item with variants is scanned one `variant` at a time.
   */
  scan(key: SeckillKey, cursor?: SeckillInt | null, options?: ScanOptions): R['scan'];
  /**
   * SECKILL.TAKE: takes up to `qty` units of the stock in hand out of this
   * part, once per transfer id; the units taken (0 if none; a retry: the same); null if no item.
   */
  take(key: SeckillKey, qty: SeckillInt, transferId: SeckillId, to?: SeckillKey | TakeOptions | null): R['take'];
  /** SECKILL.SETTLE: closes a transfer given out by `take` once its units arrived. */
  settle(key: SeckillKey, transferId: SeckillId, options?: SettleOptions): R['settle'];
  /** SECKILL.TRANSFERS: the transfers given out and not settled, by transfer id; null if no item. */
  transfers(key: SeckillKey): R['transfers'];
  /**
   * SECKILL.VARIANTS: each variant's name and stock, in the order INIT named
   * them (an empty Map for an item without variants); null if no item.
   */
  variants(key: SeckillKey): R['variants'];
}

/** What each command's reply becomes. */
export interface SeckillValues {
  init: boolean;
  deduct: DeductResult;
  confirm: ConfirmOutcome;
  release: number | null;
  refund: RefundResult;
  order: OrderResult;
  confirmOrder: OrderConfirmation;
  refundOrder: RefundResult[];
  add: number | null;
  window: true | null;
  stream: true | null;
  get: number | null;
  bought: number | null;
  holds: Hold[] | null;
  info: ItemInfo | null;
  status: OrderState | null;
  scan: ScanPage;
  take: number | null;
  settle: SettleOutcome;
  transfers: Transfer[] | null;
  variants: Map<string | Buffer, number> | null;
}

/** deduct, confirm, refund and the order commands with a wait: each resolves to a Durable of its usual value. */
export interface SeckillWaitCommands {
  deduct(key: SeckillKey, user: SeckillId, qty: SeckillInt | null | undefined, options: DeductOptions & WaitOptions): Promise<Durable<DeductResult>>;
  deduct(key: SeckillKey, user: SeckillId, options: DeductOptions & WaitOptions): Promise<Durable<DeductResult>>;
  confirm(key: SeckillKey, requestId: SeckillId, options: WaitOptions): Promise<Durable<ConfirmOutcome>>;
  refund(key: SeckillKey, requestId: SeckillId, options: WaitOptions): Promise<Durable<RefundResult>>;
  order(lines: readonly OrderLine[], user: SeckillId, requestId: SeckillId, options: OrderOptions & WaitOptions): Promise<Durable<OrderResult>>;
  confirmOrder(keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId, options: WaitOptions): Promise<Durable<OrderConfirmation>>;
  refundOrder(keys: ReadonlyArray<SeckillKey | OrderLine>, requestId: SeckillId, options: WaitOptions): Promise<Durable<RefundResult[]>>;
}

/** The iterator over an item's records (ioredis: client.seckill; node-redis: seckillOf(client)). */
export interface SeckillScanIterator {
  /**
   * Every record of the item, following SECKILL.SCAN's cursor until it is
   * '0', `count` records a call (of one `variant`, on an item with
   * variants). Every record there when the scan starts comes once, however
   * the item changes meanwhile.
   */
  scanIterator(key: SeckillKey, options?: ScanOptions): AsyncIterableIterator<ScanRecord>;
}

/**
 * The commands as promises of their values, with waits and scanIterator
 * (ioredis: client.seckill; node-redis: seckillOf(client)).
 */
export type SeckillCommands = SeckillWaitCommands & SeckillScanIterator & SeckillCommandSet<{ [K in keyof SeckillValues]: Promise<SeckillValues[K]> }>;

/**
 * The client's seckill commands, where deduct, confirm and refund also take
 * a wait ({ waitReplicas, waitTimeoutMs }). For ioredis and GLIDE (after
 * installSeckill) that is client.seckill itself; for node-redis, whose
 * module calls each send one command, the module's commands with those
 * three sending the command and WAIT in one pipeline. Errors are the
 * client's, as its calls give them (SeckillError.from types node-redis's).
 */
export declare function seckillOf(client: SplitItemClient): SeckillCommands;

// ---- split items ------------------------------------------------------------

/** FNV-1a, 32 bits (an unsigned integer), over bytes; a string is hashed as its UTF-8 bytes. */
export declare function fnv1a32(data: string | Buffer | Uint8Array): number;

/** The commands SplitItem calls, as a client with seckill has them (node-redis module, ioredis or GLIDE installer). */
export interface SplitItemClient {
  readonly seckill: {
    init(key: SeckillKey, stock: SeckillStock, options?: InitOptions): Promise<boolean>;
    deduct(key: SeckillKey, user: SeckillId, qty?: SeckillInt | DeductOptions, options?: DeductOptions): Promise<DeductResult>;
    confirm(key: SeckillKey, requestId: SeckillId): Promise<ConfirmOutcome>;
    refund(key: SeckillKey, requestId: SeckillId): Promise<RefundResult>;
    bought(key: SeckillKey, user: SeckillId): Promise<number | null>;
    get(key: SeckillKey): Promise<number | null>;
    info(key: SeckillKey): Promise<ItemInfo | null>;
  };
}

/**
 * One sale item split into parts (usually on different shards). Each user
 * always reaches the same part (FNV-1a 32 of the user id's bytes, modulo the
 * number of parts), so the per-user limit stays exact.
 */
export declare class SplitItem<C extends SplitItemClient = SplitItemClient> {
  /**
   * @param client a node-redis client or cluster created with `{ modules: { seckill } }`,
   *   or an ioredis Redis or Cluster or a GLIDE client after `installSeckill()`
   * @param parts the parts' key names, in order
   */
  constructor(client: C, parts: readonly SeckillKey[]);
  readonly client: C;
  /** The parts' key names, in order. */
  readonly parts: readonly SeckillKey[];
  /** The default part names: `${item}:part:0` ... `${item}:part:${n - 1}`. */
  static named(item: string, n: number): string[];
  static named(item: SeckillKey, n: number): SeckillKey[];
  /** The index of the user's part. */
  partFor(user: SeckillId): number;
  /** Creates every part with its share of `totalStock` (part i: floor(total / n), +1 for i < total % n); per part, true if created. */
  /** Every part with an even share of `totalStock`, or of each size of a drop (an object or a Map of size to stock). */
  init(totalStock: SeckillStocks, options?: InitOptions): Promise<boolean[]>;
  /** SECKILL.DEDUCT on the user's part (with a wait: a Durable). */
  deduct(user: SeckillId, qty: SeckillInt | null | undefined, options: DeductOptions & WaitOptions): Promise<Durable<DeductResult>>;
  deduct(user: SeckillId, options: DeductOptions & WaitOptions): Promise<Durable<DeductResult>>;
  deduct(user: SeckillId, qty?: SeckillInt | DeductOptions, options?: DeductOptions): Promise<DeductResult>;
  /** SECKILL.CONFIRM on the user's part (with a wait: a Durable). */
  confirm(user: SeckillId, requestId: SeckillId, options: WaitOptions): Promise<Durable<ConfirmOutcome>>;
  confirm(user: SeckillId, requestId: SeckillId): Promise<ConfirmOutcome>;
  /** SECKILL.REFUND on the user's part (with a wait: a Durable). */
  refund(user: SeckillId, requestId: SeckillId, options: WaitOptions): Promise<Durable<RefundResult>>;
  refund(user: SeckillId, requestId: SeckillId): Promise<RefundResult>;
  /** SECKILL.BOUGHT on the user's part. */
  bought(user: SeckillId): Promise<number | null>;
  /** The remaining stock summed over the parts (missing parts count 0); null if no part exists. */
  stock(): Promise<number | null>;
  /** SECKILL.INFO of every part, in order (null for a missing part). */
  info(): Promise<Array<ItemInfo | null>>;
  /** Each size of a split drop with its stock summed over the parts; null if no part exists. */
  variants(): Promise<Map<string | Buffer, number> | null>;
}

// ---- carts across shards ------------------------------------------------------

/** What `CartSaga.place` returns. */
export declare class CartPlacement {
  private constructor();
  /** True when every line is held under the cart id. */
  readonly placed: boolean;
  /** Each line's DeductResult, in order: every line when placed; when refused, the lines up to the refusing one. */
  readonly lines: readonly DeductResult[];
  /** The earliest deadline of the lines' pending holds, Unix ms, when placed (pay before it); null when refused, or every line confirmed since. */
  readonly deadline: number | null;
  /** The index of the line that refused the cart, or null when placed. */
  readonly refusedLine: number | null;
  /** Its outcome, or CANCELLED: the cart was refused or cancelled before; null when placed. */
  readonly refusal: Outcome | null;
  /** The REFUND of every line when refused, in order; empty when placed. */
  readonly refunds: readonly RefundResult[];
}

/** What `CartSaga.confirm` returns. */
export declare class CartConfirmation {
  private constructor();
  /** True when every line is a final purchase: the cart is paid. */
  readonly paid: boolean;
  /** Each line's ConfirmOutcome, in order: every line when paid; when not, the lines up to the failing one. */
  readonly lines: readonly ConfirmOutcome[];
  /** The index of the line that could not be confirmed, or null when paid. */
  readonly failedLine: number | null;
  /** Its outcome (LAPSED, REFUNDED, UNKNOWN_REQUEST, NO_ITEM), or null when paid. */
  readonly failure: ConfirmOutcome | null;
  /** The REFUND of every line when not paid (refund the payment), in order; empty when paid. */
  readonly refunds: readonly RefundResult[];
}

/**
 * A cart over items on different shards, as a saga of holds under the cart
 * id (the request id of every line). Every call, sent again with the same
 * arguments after a crash between any two of its commands, ends as an
 * uninterrupted call would: every line held under the cart id, or none.
 */
export declare class CartSaga<C extends SplitItemClient = SplitItemClient> {
  /**
   * @param client a node-redis client or cluster created with `{ modules: { seckill } }`,
   *   or an ioredis Redis or Cluster or a GLIDE client after `installSeckill()`
   */
  constructor(client: C);
  readonly client: C;
  /**
   * DEDUCT ... ID cartId HOLD holdSeconds on each line in order; a line
   * refused (or CANCELLED: the cart was refused before): REFUND on every line.
   */
  place(cartId: SeckillId, user: SeckillId, lines: readonly OrderLine[], holdSeconds: SeckillInt): Promise<CartPlacement>;
  /** CONFIRM each line in order; one that cannot be: REFUND on every line, and not paid. */
  confirm(cartId: SeckillId, keys: ReadonlyArray<SeckillKey | OrderLine>): Promise<CartConfirmation>;
  /** REFUND on every line (idempotent). */
  cancel(cartId: SeckillId, keys: ReadonlyArray<SeckillKey | OrderLine>): Promise<readonly RefundResult[]>;
}

export { seckill, SeckillModule } from './node-redis';
export { WithSeckill, SeckillPipeline, InstallSeckillOptions } from './ioredis';
export { WithSeckillGlide, WithSeckillBatch, GlideClientLike, GlideBatchLike, InstallSeckillGlideOptions } from './glide';

import type { WithSeckill, InstallSeckillOptions } from './ioredis';
import type { WithSeckillGlide, WithSeckillBatch, GlideClientLike, GlideBatchLike, InstallSeckillGlideOptions } from './glide';

/**
 * Gives a client the SECKILL.* commands as client.seckill, by the installer
 * of its kind: a Valkey GLIDE batch (Batch, ClusterBatch: each call queued)
 * or client (GlideClient, GlideClusterClient), or an ioredis Redis or
 * Cluster (each command keyed by its item key: Cluster routing, keyPrefix,
 * auto-pipelining). Returns the same object.
 */
export declare function installSeckill<B extends GlideBatchLike>(batch: B): WithSeckillBatch<B>;
export declare function installSeckill<C extends GlideClientLike>(client: C, options?: InstallSeckillGlideOptions): WithSeckillGlide<C>;
export declare function installSeckill<T extends object>(client: T, options?: InstallSeckillOptions): WithSeckill<T>;
