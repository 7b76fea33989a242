'use strict';
// A cart whose items live on different shards (different hash tags), which
// SECKILL.MDEDUCT cannot take in one call: a saga over holds, every step of
// which is idempotent under the cart id, used as the request id on every
// item.
//
//   place   SECKILL.DEDUCT key user qty ID cart HOLD s, line by line, in
//           order. All held: placed. A line refused: SECKILL.REFUND key cart
//           on every line, then refused.
//   confirm SECKILL.CONFIRM key cart DETAIL, line by line. All final: paid.
//           A line that cannot be (lapsed, refunded, unknown, no item):
//           SECKILL.REFUND on every line, then not paid.
//   cancel  SECKILL.REFUND key cart DETAIL on every line.
//
// Why a crash is harmless: each call, sent again with the same arguments
// after the process died between any two of its commands, ends as a call
// that was never interrupted would have.
// - A held line replays its first reply (a retry of a request id takes
//   nothing more), so `place` walks past the lines held before the crash.
// - REFUND marks the request id refunded on that item: a later DEDUCT under
//   it answers CANCELLED and can never take the line again. `place` reads a
//   CANCELLED line as "this cart was refused (or cancelled) before" and
//   gives back every line again, so a refusal interrupted half-way is
//   finished, never undone. Giving back is REFUND of every line, whatever
//   this run saw: a line held by an earlier run, or never held (REFUND of an
//   id the item never saw changes nothing), ends the same.
// - `confirm` after a crash: lines confirmed before answer ALREADY_FINAL; a
//   failure found on the retry gives every line back, the confirmed ones
//   too, so no unit stays taken for a cart that cannot be paid.
// So every run of `place` ends with every line held under the cart id, or
// none. Holds lapse by themselves at their deadline too: a cart abandoned
// half-placed gives its units back then (and `confirm` refuses it).
//
// The steps go one at a time, in the lines' order, so that a crash leaves a
// prefix of them done. One call at a time per cart: two concurrent calls for
// one cart may interleave their steps (the next `confirm` still refuses a
// cart left partly refunded, and refunds it whole).

const { orderLines, orderKeys, bytes, integer } = require('./commands');
const { Outcome, ConfirmOutcome } = require('./values');
const { seckillOf } = require('./wait');

/** What `CartSaga.place` returns. */
class CartPlacement {
  constructor(placed, lines, deadline, refusedLine, refusal, refunds) {
    /** True when every line is held under the cart id (until `deadline` at the earliest). */
    this.placed = placed;
    /**
     * Each line's DeductResult, in order: every line when placed; when
     * refused, the lines up to the refusing one (the lines after it were not
     * tried).
     */
    this.lines = Object.freeze(lines);
    /**
     * The earliest deadline of the lines' pending holds, Unix ms, when placed
     * (pay before it); null when refused, or when every line was confirmed since.
     */
    this.deadline = deadline;
    /** The index of the line that refused the cart, or null when placed. */
    this.refusedLine = refusedLine;
    /**
     * Its Outcome (SOLD_OUT, LIMIT_REACHED, NO_ITEM, NOT_STARTED, ENDED), or
     * CANCELLED: this cart was refused or cancelled before (a line of it was
     * given back); null when placed.
     */
    this.refusal = refusal;
    /** The REFUND of every line when refused (RefundResult per line, in order); empty when placed. */
    this.refunds = Object.freeze(refunds);
    Object.freeze(this);
  }
}

/** What `CartSaga.confirm` returns. */
class CartConfirmation {
  constructor(paid, lines, failedLine, failure, refunds) {
    /** True when every line is a final purchase: the cart is paid. */
    this.paid = paid;
    /**
     * Each line's ConfirmOutcome, in order: every line when paid; when not,
     * the lines up to the failing one.
     */
    this.lines = Object.freeze(lines);
    /** The index of the line that could not be confirmed, or null when paid. */
    this.failedLine = failedLine;
    /** Its ConfirmOutcome (LAPSED, REFUNDED, UNKNOWN_REQUEST, NO_ITEM), or null when paid. */
    this.failure = failure;
    /**
     * The REFUND of every line when not paid (RefundResult per line, in
     * order): no unit stays taken, so refund the payment; empty when paid.
     */
    this.refunds = Object.freeze(refunds);
    Object.freeze(this);
  }
}

const isFinal = (outcome) => outcome === ConfirmOutcome.CONFIRMED || outcome === ConfirmOutcome.ALREADY_FINAL;

function commandsOf(client) {
  try {
    return seckillOf(client);
  } catch {
    throw new TypeError('CartSaga needs a client with the seckill commands: a node-redis client or cluster '
      + 'created with { modules: { seckill } }, or an ioredis Redis or Cluster or a GLIDE client passed to installSeckill()');
  }
}

/**
 * Carts over items on different shards, as a saga of holds under the cart
 * id (see the top of this file for why a crash and a retry are safe).
 * Errors (a request id conflict, a lost connection, ...) are thrown as the
 * client's calls throw them; the same call sent again resumes the cart.
 */
class CartSaga {
  #sk;

  /**
   * @param client a node-redis client or cluster created with
   *   { modules: { seckill } }, or an ioredis Redis or Cluster or a GLIDE
   *   client after installSeckill()
   */
  constructor(client) {
    this.#sk = commandsOf(client);
    /** The client given. */
    this.client = client;
  }

  /**
   * Holds every line for `user` under the cart id for `holdSeconds`, or
   * none. Sent again with the same arguments (a retry, or a resume after a
   * crash), it ends the cart the same way.
   * @param cartId the request id of every line: unique per cart
   * @param user the buyer
   * @param lines [key, qty] or { key, qty } ([key, qty, variant] or
   *   { key, qty, variant } for a variant), in the order they are held
   * @param holdSeconds how long the lines stay held unpaid
   * @returns {Promise<CartPlacement>}
   */
  async place(cartId, user, lines, holdSeconds) {
    const parsed = orderLines(lines, 'CartSaga.place');
    const keys = parsed.map(([key]) => key);
    bytes(cartId, 'cartId');
    bytes(user, 'user');
    integer(holdSeconds, 'holdSeconds');
    const results = [];
    for (const [i, [key, qty, variant]] of parsed.entries()) {
      const options = { requestId: cartId, hold: holdSeconds };
      if (variant !== null) options.variant = variant;
      const result = await this.#sk.deduct(key, user, qty, options);
      results.push(result);
      if (result.outcome !== Outcome.BOUGHT) {
        const refunds = await this.#giveBack(cartId, keys);
        return new CartPlacement(false, results, null, i, result.outcome, refunds);
      }
    }
    // A replay of a hold still pending reports its deadline too (one
    // confirmed since reports none); the cart must be paid before the first.
    const deadlines = results.map((r) => r.deadline).filter((d) => d !== null);
    const deadline = deadlines.length > 0 ? Math.min(...deadlines) : null;
    return new CartPlacement(true, results, deadline, null, null, []);
  }

  /**
   * Confirms every line of a paid cart, or (when one cannot be: lapsed,
   * refunded, unknown, no item) gives every line back, so that the payment
   * is refunded and no unit stays taken. Idempotent: sent again, it ends the
   * same way.
   * @param cartId the cart id given to place
   * @param keys the cart's keys (or its lines), in place's order
   * @returns {Promise<CartConfirmation>}
   */
  async confirm(cartId, keys) {
    const list = orderKeys(keys, 'CartSaga.confirm');
    bytes(cartId, 'cartId');
    const outcomes = [];
    for (const [i, key] of list.entries()) {
      const outcome = await this.#sk.confirm(key, cartId);
      outcomes.push(outcome);
      if (!isFinal(outcome)) {
        const refunds = await this.#giveBack(cartId, list);
        return new CartConfirmation(false, outcomes, i, outcome, refunds);
      }
    }
    return new CartConfirmation(true, outcomes, null, null, []);
  }

  /**
   * Gives every line of the cart back (REFUND, whether held or confirmed).
   * Idempotent: a line given back before answers ALREADY_REFUNDED.
   * @param cartId the cart id given to place
   * @param keys the cart's keys (or its lines)
   * @returns {Promise<RefundResult[]>} one per line, in order
   */
  async cancel(cartId, keys) {
    const list = orderKeys(keys, 'CartSaga.cancel');
    bytes(cartId, 'cartId');
    return Object.freeze(await this.#giveBack(cartId, list));
  }

  // REFUND on every line, one at a time in order (a crash leaves a prefix
  // given back, and the retry gives back the rest).
  async #giveBack(cartId, keys) {
    const refunds = [];
    for (const key of keys) refunds.push(await this.#sk.refund(key, cartId));
    return refunds;
  }
}

module.exports = { CartSaga, CartPlacement, CartConfirmation };
