"""A flash-sale HTTP service over seckill's Python client (FastAPI, asyncio).

    pip install -e 'clients/python[examples]'
    SHOP_REDIS_URL=redis://127.0.0.1:6379/0 uvicorn --app-dir examples/python shop:app --port 8000

POST /items/{item}?stock=N&limit=L    open a sale (again: left as it is)
POST /orders/{order}?item=I&user=U    buy one unit, held until paid (the client picks the order id)
POST /orders/{order}/pay?item=I       the payment arrived: the hold becomes a sale
POST /orders/{order}/cancel?item=I    give the unit back (held or paid)
GET  /orders/{order}?item=I           where the order stands (held: pay by when)
GET  /items/{item}                    the stock left

Every outcome has its HTTP status; a retried request (same order id) gets the first answer and
never sells twice. With SHOP_WAIT_REPLICAS=N a payment is "paid" only once N replicas have it
(else 503: the payment provider sends the webhook again, and confirming again is safe).
"""

from __future__ import annotations

import os

import redis.asyncio as redis
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from seckill import ConfirmOutcome, Outcome, RefundOutcome, RequestIdConflictError, RequestStatus
from seckill.asyncio import Seckill

# How long a buyer has to pay before the unit goes back on sale.
HOLD_SECONDS = int(os.environ.get("SHOP_HOLD_SECONDS", "900"))
# Replicas that must have a payment before it is "paid" (0: the master's word is enough).
WAIT_REPLICAS = int(os.environ.get("SHOP_WAIT_REPLICAS", "0"))

client = redis.Redis.from_url(os.environ.get("SHOP_REDIS_URL", "redis://127.0.0.1:6379/0"))
sk = Seckill(client)
app = FastAPI(title="flash sale")

# What a refused purchase tells the buyer.
REFUSED = {
    Outcome.SOLD_OUT: (409, "sold out"),
    Outcome.LIMIT_REACHED: (409, "limit reached"),
    Outcome.NO_ITEM: (404, "no such sale"),
    Outcome.CANCELLED: (410, "order cancelled or expired"),
    Outcome.NOT_STARTED: (403, "the sale has not started"),
    Outcome.ENDED: (410, "the sale has ended"),
}


def answer(code: int, **body: object) -> JSONResponse:
    return JSONResponse(body, status_code=code)


@app.post("/items/{item}")
async def open_sale(item: str, stock: int, limit: int = 1) -> JSONResponse:
    created = await sk.init(item, stock, limit=limit)
    return answer(201 if created else 200, item=item, created=created)


@app.get("/items/{item}")
async def stock(item: str) -> JSONResponse:
    left = await sk.get(item)
    if left is None:
        return answer(404, error="no such sale")
    return answer(200, item=item, stock=left)


@app.post("/orders/{order}")
async def buy(order: str, item: str, user: str) -> JSONResponse:
    try:
        result = await sk.deduct(item, user, 1, request_id=order, hold=HOLD_SECONDS)
    except RequestIdConflictError:
        return answer(409, order=order, error="order id already used for another purchase")
    if result.outcome is Outcome.BOUGHT:
        return answer(201, order=order, status="held", pay_within_s=HOLD_SECONDS, stock=result.stock)
    code, error = REFUSED[result.outcome]
    return answer(code, order=order, error=error)


@app.get("/orders/{order}")
async def order_state(order: str, item: str) -> JSONResponse:
    state = await sk.status(item, order)
    if state is None:
        return answer(404, order=order, error="no such sale")
    if state.status is RequestStatus.UNKNOWN:
        return answer(404, order=order, error="no such order")
    pay_by = {"pay_by_ms": state.deadline} if state.status is RequestStatus.HELD else {}
    return answer(200, order=order, status=state.status.value, user=state.user, qty=state.qty, **pay_by)


@app.post("/orders/{order}/pay")
async def pay(order: str, item: str) -> JSONResponse:
    done = await sk.confirm(item, order, wait_replicas=WAIT_REPLICAS)
    if done.result in (ConfirmOutcome.CONFIRMED, ConfirmOutcome.ALREADY_FINAL):
        if not done.durable:  # on the master alone: a failover could lose it
            return answer(503, order=order, error="payment not on enough replicas yet, send it again")
        return answer(200, order=order, status="paid")
    if done.result is ConfirmOutcome.NO_ITEM:
        return answer(404, order=order, error="no such sale")
    if done.result is ConfirmOutcome.UNKNOWN_REQUEST:
        return answer(404, order=order, error="no such order")
    # Expired or cancelled: take no money (or give it back), and say which.
    expired = done.result is ConfirmOutcome.LAPSED
    return answer(410, order=order, error="order expired" if expired else "order cancelled")


@app.post("/orders/{order}/cancel")
async def cancel(order: str, item: str) -> JSONResponse:
    refund = await sk.refund(item, order)
    if refund.outcome is RefundOutcome.NO_ITEM:
        return answer(404, order=order, error="no such sale")
    if refund.outcome is RefundOutcome.UNKNOWN_REQUEST:
        return answer(404, order=order, error="no such order")
    # Cancelled before, or expired unpaid: the unit went back once already.
    return answer(200, order=order, status="cancelled", units_returned=refund.units or 0)
