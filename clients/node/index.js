'use strict';
// seckill-client: typed access to the seckill Redis module's SECKILL.*
// commands from node-redis (a module: createClient({ modules: { seckill } })),
// ioredis (installSeckill(redis)) and Valkey GLIDE (installSeckill(client),
// installSeckill(batch)). No client library is required until its entry
// point is used.

const values = require('./lib/values');
const errors = require('./lib/errors');
const split = require('./lib/split');
const cart = require('./lib/cart');
const { seckillOf } = require('./lib/wait');
const { seckill } = require('./node-redis');
const ioredis = require('./ioredis');
const glide = require('./glide');

/**
 * installSeckill(client): an ioredis Redis or Cluster, or a GLIDE client or
 * batch, each by its own installer (./ioredis, ./glide). Returns the same object.
 */
function installSeckill(client, options) {
  return glide.isGlide(client) ? glide.installSeckill(client, options) : ioredis.installSeckill(client, options);
}

module.exports = {
  seckill,
  installSeckill,
  seckillOf,
  UNLIMITED: values.UNLIMITED,
  UNLIMITED_STOCK: values.UNLIMITED_STOCK,
  UNLIMITED_STOCK_BIGINT: values.UNLIMITED_STOCK_BIGINT,
  Outcome: values.Outcome,
  ConfirmOutcome: values.ConfirmOutcome,
  RefundOutcome: values.RefundOutcome,
  SettleOutcome: values.SettleOutcome,
  DeductResult: values.DeductResult,
  RefundResult: values.RefundResult,
  OrderResult: values.OrderResult,
  OrderConfirmation: values.OrderConfirmation,
  Durable: values.Durable,
  Hold: values.Hold,
  Transfer: values.Transfer,
  ItemInfo: values.ItemInfo,
  RequestStatus: values.RequestStatus,
  OrderState: values.OrderState,
  BuyerRecord: values.BuyerRecord,
  RequestRecord: values.RequestRecord,
  ScanPage: values.ScanPage,
  SplitItem: split.SplitItem,
  fnv1a32: split.fnv1a32,
  CartSaga: cart.CartSaga,
  CartPlacement: cart.CartPlacement,
  CartConfirmation: cart.CartConfirmation,
  ErrorKind: errors.ErrorKind,
  SeckillError: errors.SeckillError,
  RequestIdConflictError: errors.RequestIdConflictError,
  OrderStreamError: errors.OrderStreamError,
  ItemFullError: errors.ItemFullError,
  WrongTypeError: errors.WrongTypeError,
  NoPermissionError: errors.NoPermissionError,
  InvalidArgumentError: errors.InvalidArgumentError,
  UnavailableError: errors.UnavailableError,
};
