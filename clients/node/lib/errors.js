'use strict';
// Typed errors, decided from the server's error text in one place (the same
// rules as the Python and Rust clients), whichever client raised it
// (node-redis, ioredis, Valkey GLIDE, which rewords the reply: see
// glideReplyText), and from the client's own error when the connection was
// lost during a call.

const ErrorKind = Object.freeze({
  REQUEST_ID_CONFLICT: 'REQUEST_ID_CONFLICT',
  ORDER_STREAM: 'ORDER_STREAM',
  ITEM_FULL: 'ITEM_FULL',
  WRONG_TYPE: 'WRONG_TYPE',
  NO_PERMISSION: 'NO_PERMISSION',
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  UNAVAILABLE: 'UNAVAILABLE',
});

// Replies saying the server cannot take a write now, whatever the command:
// too few replicas for min-replicas-to-write, a replica (e.g. after a
// failover), a replica whose master is down, a dataset being loaded.
const UNAVAILABLE_CODES = new Set(['NOREPLICAS', 'READONLY', 'MASTERDOWN', 'LOADING']);

// How the clients reject a call whose connection was lost before its reply
// came: node-redis with SocketClosedUnexpectedlyError or the socket's own
// error (ECONNRESET, ...), ioredis with "Connection is closed." (no
// reconnection) or MaxRetriesPerRequestError (reconnected, and lost again),
// GLIDE with its ConnectionError (see isConnectionLost).
const LOST_CONNECTION_NAMES = new Set(['SocketClosedUnexpectedlyError', 'MaxRetriesPerRequestError']);
const LOST_CONNECTION_CODES = new Set([
  'ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ECONNABORTED', 'ENOTCONN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH',
]);
const IOREDIS_CONNECTION_CLOSED = 'Connection is closed.';

// Error classes of the clients, by constructor name: node-redis's
// SimpleError / BlobError / ErrorReply, ioredis's ReplyError (redis-errors).
const REPLY_ERROR_NAMES = new Set(['SimpleError', 'BlobError', 'ErrorReply', 'ReplyError']);

// GLIDE words an error reply as its core (a fork of redis-rs) formats it: a
// code it knows becomes the name of its error kind ("ERR request id ..."
// reads "An error was signalled by the server: - ResponseError: request id
// ..."), and any other code stays in front, with a colon ("WRONGTYPE:
// Operation against ..."). Its error classes derive from ValkeyError; an
// error reply is a RequestError itself (its subclasses are timeouts, lost
// connections, aborted transactions).
const GLIDE_BASE_ERROR = 'ValkeyError';
const GLIDE_CODE_BY_KIND = new Map([
  ['ResponseError', 'ERR'],
  ['ExecAbortError', 'EXECABORT'],
  ['BusyLoadingError', 'LOADING'],
  ['NoScriptError', 'NOSCRIPT'],
  ['Moved', 'MOVED'],
  ['Ask', 'ASK'],
  ['TryAgain', 'TRYAGAIN'],
  ['ClusterDown', 'CLUSTERDOWN'],
  ['CrossSlot', 'CROSSSLOT'],
  ['MasterDown', 'MASTERDOWN'],
  ['ReadOnly', 'READONLY'],
  ['NotBusy', 'NOTBUSY'],
  ['PermissionDenied', 'NOPERM'],
]);
const GLIDE_KNOWN_CODE = /^An error was signalled by the server: ?- (\w+)(?:: ([\s\S]*))?$/;
const GLIDE_OTHER_CODE = /^([A-Z][A-Z0-9_-]*): ([\s\S]*)$/;

/**
 * Base class of the typed errors: every error a SECKILL command replies
 * with, and UnavailableError (also for a connection lost during a call).
 */
class SeckillError extends Error {
  /**
   * @param {string} message the text without its code
   * @param {{code?: string, kind?: string, cause?: unknown}} [options]
   */
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    /**
     * The error's code: the leading word of the reply, e.g. "ERR",
     * "WRONGTYPE"; "" for a connection lost during the call (no reply).
     */
    this.code = options.code ?? 'ERR';
    /** One of ErrorKind. */
    this.kind = options.kind ?? new.target.KIND ?? ErrorKind.INVALID_ARGUMENT;
    /** True when the same call may succeed if sent again (TRYAGAIN, or UNAVAILABLE). */
    this.retryable = this.code === 'TRYAGAIN' || this.kind === ErrorKind.UNAVAILABLE;
  }

  /**
   * The typed error for an error reply's full text ("CODE message"), or
   * null when the error is neither the module's nor a server's refusal to
   * take writes now (OOM, MOVED, ...): those stay the client's own errors,
   * as in every seckill client.
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
   * The typed error for an error reply from node-redis (ErrorReply), ioredis
   * (ReplyError) or GLIDE (RequestError) to a SECKILL command, or an UnavailableError (code
   * "") for the error a client rejects a call with when its connection was
   * lost before the reply came. Anything else (a SeckillError already, a
   * TypeError, node-redis's MultiErrorReply, a client closed on purpose) is
   * returned as it is.
   * @template T
   * @param {T} err
   */
  static from(err) {
    if (err instanceof SeckillError) return err;
    if (isReplyError(err)) return SeckillError.fromReplyText(err.message, err) ?? err;
    if (isGlideError(err, 'RequestError')) {
      const text = glideReplyText(err.message);
      return (text !== null && SeckillError.fromReplyText(text, err)) || err;
    }
    if (isConnectionLost(err)) {
      return new UnavailableError(err.message, { code: '', kind: ErrorKind.UNAVAILABLE, cause: err });
    }
    return err;
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
/**
 * The server could not take the write now, or the connection was lost
 * during the call: send the same call again, to the current master (always
 * retryable). `code` says which: NOREPLICAS, READONLY, MASTERDOWN, LOADING
 * (nothing was changed), or "" for a lost connection (the write may or may
 * not have happened: sent again with the same request id, it happens once).
 */
class UnavailableError extends SeckillError {}
UnavailableError.KIND = ErrorKind.UNAVAILABLE;

const CLASS_BY_KIND = {
  [ErrorKind.REQUEST_ID_CONFLICT]: RequestIdConflictError,
  [ErrorKind.ORDER_STREAM]: OrderStreamError,
  [ErrorKind.ITEM_FULL]: ItemFullError,
  [ErrorKind.WRONG_TYPE]: WrongTypeError,
  [ErrorKind.NO_PERMISSION]: NoPermissionError,
  [ErrorKind.INVALID_ARGUMENT]: InvalidArgumentError,
  [ErrorKind.UNAVAILABLE]: UnavailableError,
};

function isReplyError(err) {
  if (!(err instanceof Error) || typeof err.message !== 'string') return false;
  return REPLY_ERROR_NAMES.has(err.name) || REPLY_ERROR_NAMES.has(err.constructor && err.constructor.name);
}

// A GLIDE error of exactly this class (by name: this package does not
// require GLIDE), told from others' by GLIDE's base class.
function isGlideError(err, className) {
  if (!(err instanceof Error) || !err.constructor || err.constructor.name !== className) return false;
  for (let proto = Object.getPrototypeOf(err); proto; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor && proto.constructor.name === GLIDE_BASE_ERROR) return true;
  }
  return false;
}

// GLIDE's wording of an error reply back to the server's text ("CODE
// message"), or null for an error GLIDE raised itself.
function glideReplyText(text) {
  const known = GLIDE_KNOWN_CODE.exec(text);
  if (known) {
    const code = GLIDE_CODE_BY_KIND.get(known[1]);
    return code === undefined ? null : `${code} ${known[2] ?? ''}`;
  }
  const other = GLIDE_OTHER_CODE.exec(text);
  return other ? `${other[1]} ${other[2]}` : null;
}

function isConnectionLost(err) {
  if (!(err instanceof Error)) return false;
  // GLIDE reconnects by itself, and rejects the calls caught by the loss.
  if (isGlideError(err, 'ConnectionError')) return true;
  if (LOST_CONNECTION_NAMES.has(err.name) || LOST_CONNECTION_NAMES.has(err.constructor && err.constructor.name)) return true;
  if (typeof err.code === 'string' && LOST_CONNECTION_CODES.has(err.code)) return true;
  return err.message === IOREDIS_CONNECTION_CLOSED;
}

// "ERR some text" -> { code: 'ERR', message: 'some text' }. Error replies start
// with an upper-case code; a text without one gets "ERR", as Redis clients do.
function splitCode(text) {
  const m = /^([A-Z][A-Z0-9_-]*)(?: ([\s\S]*))?$/.exec(text);
  if (m) return { code: m[1], message: m[2] ?? '' };
  return { code: 'ERR', message: text };
}

function classify(code, message) {
  if (UNAVAILABLE_CODES.has(code)) return ErrorKind.UNAVAILABLE;
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
  UnavailableError,
  isReplyError,
};
