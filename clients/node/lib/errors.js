'use strict';
// Typed errors, decided from the server's error text in one place (the same
// rules as the Python and Rust clients).

const ErrorKind = Object.freeze({
  REQUEST_ID_CONFLICT: 'REQUEST_ID_CONFLICT',
  ORDER_STREAM: 'ORDER_STREAM',
  ITEM_FULL: 'ITEM_FULL',
  WRONG_TYPE: 'WRONG_TYPE',
  NO_PERMISSION: 'NO_PERMISSION',
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
});

// Error classes of the clients, by constructor name: node-redis's
// SimpleError / BlobError / ErrorReply, ioredis's ReplyError (redis-errors).
const REPLY_ERROR_NAMES = new Set(['SimpleError', 'BlobError', 'ErrorReply', 'ReplyError']);

/** Base class of every error a SECKILL command replies with. */
class SeckillError extends Error {
  /**
   * @param {string} message the text without its code
   * @param {{code?: string, kind?: string, cause?: unknown}} [options]
   */
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    /** The error's code: the leading word of the reply, e.g. "ERR", "WRONGTYPE". */
    this.code = options.code ?? 'ERR';
    /** One of ErrorKind. */
    this.kind = options.kind ?? new.target.KIND ?? ErrorKind.INVALID_ARGUMENT;
    /** True when the same call may succeed if retried (TRYAGAIN). */
    this.retryable = this.code === 'TRYAGAIN';
  }

  /**
   * The typed error for an error reply's full text ("CODE message"), or
   * null when the error is not the module's (OOM, READONLY, LOADING, MOVED,
   * ...): those stay the client's own errors, as in every seckill client.
   * @param {string} text
   */
  static fromReplyText(text, cause) {
    const { code, message } = splitCode(text);
    const kind = classify(code, message);
    if (kind === null) return null;
    const Class = CLASS_BY_KIND[kind];
    return new Class(message, { code, kind, cause });
  }

  /**
   * The typed error for an error reply from node-redis (ErrorReply) or
   * ioredis (ReplyError) to a SECKILL command. Anything else (a SeckillError
   * already, a connection error, a TypeError, node-redis's MultiErrorReply)
   * is returned as it is.
   * @template T
   * @param {T} err
   */
  static from(err) {
    if (err instanceof SeckillError) return err;
    if (!isReplyError(err)) return err;
    return SeckillError.fromReplyText(err.message, err) ?? err;
  }
}

class RequestIdConflictError extends SeckillError {}
RequestIdConflictError.KIND = ErrorKind.REQUEST_ID_CONFLICT;
class OrderStreamError extends SeckillError {}
OrderStreamError.KIND = ErrorKind.ORDER_STREAM;
class ItemFullError extends SeckillError {}
ItemFullError.KIND = ErrorKind.ITEM_FULL;
class WrongTypeError extends SeckillError {}
WrongTypeError.KIND = ErrorKind.WRONG_TYPE;
class NoPermissionError extends SeckillError {}
NoPermissionError.KIND = ErrorKind.NO_PERMISSION;
class InvalidArgumentError extends SeckillError {}
InvalidArgumentError.KIND = ErrorKind.INVALID_ARGUMENT;

const CLASS_BY_KIND = {
  [ErrorKind.REQUEST_ID_CONFLICT]: RequestIdConflictError,
  [ErrorKind.ORDER_STREAM]: OrderStreamError,
  [ErrorKind.ITEM_FULL]: ItemFullError,
  [ErrorKind.WRONG_TYPE]: WrongTypeError,
  [ErrorKind.NO_PERMISSION]: NoPermissionError,
  [ErrorKind.INVALID_ARGUMENT]: InvalidArgumentError,
};

function isReplyError(err) {
  if (!(err instanceof Error) || typeof err.message !== 'string') return false;
  return REPLY_ERROR_NAMES.has(err.name) || REPLY_ERROR_NAMES.has(err.constructor && err.constructor.name);
}

// "ERR some text" -> { code: 'ERR', message: 'some text' }. Error replies start
// with an upper-case code; a text without one gets "ERR", as Redis clients do.
function splitCode(text) {
  const m = /^([A-Z][A-Z0-9_-]*)(?: ([\s\S]*))?$/.exec(text);
  if (m) return { code: m[1], message: m[2] ?? '' };
  return { code: 'ERR', message: text };
}

function classify(code, message) {
  if (message.includes('request id was already used') || message.includes('transfer id was already used')) {
    return ErrorKind.REQUEST_ID_CONFLICT;
  }
  if (message.includes("the item's order stream")) return ErrorKind.ORDER_STREAM;
  if (message.includes('sale item is full')) return ErrorKind.ITEM_FULL;
  if (code === 'WRONGTYPE') return ErrorKind.WRONG_TYPE;
  if (code === 'NOPERM') return ErrorKind.NO_PERMISSION;
  if (code === 'ERR') return ErrorKind.INVALID_ARGUMENT;
  return null;
}

module.exports = {
  ErrorKind,
  SeckillError,
  RequestIdConflictError,
  OrderStreamError,
  ItemFullError,
  WrongTypeError,
  NoPermissionError,
  InvalidArgumentError,
  isReplyError,
};
