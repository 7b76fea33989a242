// ESM entry: the same objects as the CommonJS entry (no second copy of the classes).
import cjs from './index.js';

export const {
  seckill,
  installSeckill,
  UNLIMITED,
  UNLIMITED_STOCK,
  UNLIMITED_STOCK_BIGINT,
  Outcome,
  ConfirmOutcome,
  SettleOutcome,
  DeductResult,
  Hold,
  Transfer,
  ItemInfo,
  SplitItem,
  fnv1a32,
  ErrorKind,
  SeckillError,
  RequestIdConflictError,
  OrderStreamError,
  ItemFullError,
  WrongTypeError,
  NoPermissionError,
  InvalidArgumentError,
} = cjs;
