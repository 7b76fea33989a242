"""The Python client against contract/seckill.json, the file the module's tests and the other client
libraries' tests read too: every error the contract can provoke, sent to a real server and typed by this
library into the contract's kind, code, text and retryability; the outcome names and codes of DEDUCT,
CONFIRM, REFUND and SETTLE; and INFO's fields."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import servers
from seckill import ConfirmOutcome, ErrorKind, ItemInfo, Outcome, RefundOutcome, SeckillError, SettleOutcome
from seckill.errors import error_kind, typed_error
from seckill.replies import RESPONSE_CALLBACKS, item_info, register_response_callbacks

CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[3] / "contract" / "seckill.json").read_text(encoding="utf-8")
)
PROVOCABLE = [error for error in CONTRACT["errors"] if "provoke" in error]
OUTCOMES = [(command, outcome) for command, outcomes in sorted(CONTRACT["outcomes"].items()) for outcome in outcomes]
TYPED_OUTCOMES = {
    "SECKILL.DEDUCT": Outcome,
    "SECKILL.CONFIRM": ConfirmOutcome,
    "SECKILL.REFUND": RefundOutcome,
    "SECKILL.SETTLE": SettleOutcome,
}
# The results that carry a figure beside their outcome (a DeductResult, a RefundResult): the field
# that holds it, set only for the outcome whose code is a range ("code_at_least").
FIGURES = {"SECKILL.DEDUCT": "stock", "SECKILL.REFUND": "units"}
RANGED = [(command, outcome) for command, outcome in OUTCOMES if "code_at_least" in outcome]


@pytest.fixture(scope="module")
def fresh() -> Iterator[servers.Server]:
    """A server of this file's own: some cases change its settings or role for a moment."""
    with servers.standalone() as started:
        yield started


def command(args: list[str], key: str, n: int | None = None) -> list[str]:
    words = [arg.replace("$KEY", key) for arg in args]
    return words if n is None else [word.replace("$N", str(n)) for word in words]


def provoke_with(
    server: servers.Server,
    case: dict[str, Any],
    key: str,
    send: Callable[[list[str], dict[str, Any] | None], Any],
    errors: type[BaseException] | tuple[type[BaseException], ...],
) -> Any:
    """Setup, ``send(trigger, trigger_as)`` (its reply, or the error of ``errors`` it raised,
    returned), cleanup: setup and cleanup go through a plain client of the server, and the cleanup
    runs whatever the trigger did, so the server stays fresh for the next case."""
    with server.client() as setup:
        for args in case.get("setup", []):
            setup.execute_command(*command(args, key))
        repeated = case.get("setup_repeated")
        if repeated is not None:
            pipe = setup.pipeline(transaction=False)
            for n in range(repeated["times"]):
                pipe.execute_command(*command(repeated["command"], key, n))
            pipe.execute()
        try:
            return send(command(case["trigger"], key), case.get("trigger_as"))
        except errors as error:
            return error
        finally:
            for args in case.get("cleanup", []):
                setup.execute_command(*command(args, key))


def provoke(server: servers.Server, client: redis.Redis, case: dict[str, Any], key: str) -> Any:
    """A contract case through ``client`` (or, for a ``trigger_as`` case, a connection of that
    user): its reply, or the error it raised."""

    def send(trigger: list[str], user: dict[str, Any] | None) -> Any:
        if user is None:
            return client.execute_command(*trigger)
        with server.client(username=command([user["user"]], key)[0], password=user["password"]) as as_user:
            return as_user.execute_command(*trigger)

    return provoke_with(server, case, key, send, redis.exceptions.RedisError)


def test_the_kinds_are_the_contracts() -> None:
    assert sorted(kind.value for kind in ErrorKind) == [kind["name"] for kind in CONTRACT["kinds"]]
    (unavailable,) = [kind for kind in CONTRACT["kinds"] if kind["name"] == "UNAVAILABLE"]
    for code in unavailable["server_codes"]:
        assert error_kind(code, "any text") is ErrorKind.UNAVAILABLE, code


@pytest.mark.parametrize("error", CONTRACT["errors"], ids=lambda error: error["name"])
def test_every_contract_text_is_classified_as_its_kind(error: dict[str, Any]) -> None:
    # Provocable or not: a text only a cluster or an AOF load sends is sorted here all the same.
    code = error["code"]
    message = error.get("text", error.get("template"))[len(code) :].lstrip()
    assert error_kind(code, message) is ErrorKind(error["kind"])


@pytest.mark.parametrize("error", PROVOCABLE, ids=lambda error: error["name"])
def test_every_provocable_error_is_typed_as_the_contract_says(fresh: servers.Server, error: dict[str, Any]) -> None:
    with fresh.client() as client:
        raised = provoke(fresh, client, error["provoke"], f"contract-{error['name']}")
    assert isinstance(raised, redis.exceptions.RedisError), f"{error['name']} replied {raised!r}"
    typed = typed_error(raised)
    assert isinstance(typed, SeckillError), f"{raised!r} left untyped"
    assert (typed.kind.value, typed.code, typed.retryable) == (error["kind"], error["code"], error["retryable"])
    assert f"{typed.code} {typed.message}" in [error["text"], *error.get("other_texts", [])]


@pytest.mark.parametrize("command_name", sorted(CONTRACT["outcomes"]))
def test_outcome_names_and_codes_are_the_contracts(command_name: str) -> None:
    assert command_name in TYPED_OUTCOMES, f"the outcomes of {command_name} are not typed"
    ours = {outcome.name: outcome.value for outcome in TYPED_OUTCOMES[command_name]}
    assert ours == {outcome["name"]: outcome["code"] for outcome in CONTRACT["outcomes"][command_name]}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize(("command_name", "outcome"), OUTCOMES, ids=lambda v: v["name"] if isinstance(v, dict) else v)
def test_every_outcome_is_decoded_as_the_contract_names_it(
    fresh: servers.Server, protocol: int, command_name: str, outcome: dict[str, Any]
) -> None:
    case = outcome["provoke"]
    with fresh.client(protocol=protocol) as client:
        register_response_callbacks(client)
        reply = provoke(fresh, client, case, f"contract-{command_name}-{outcome['name']}-{protocol}")
    if command_name in FIGURES:
        assert reply.outcome is TYPED_OUTCOMES[command_name][outcome["name"]]
        figure = getattr(reply, FIGURES[command_name])
        assert figure == (case["reply"] if "code_at_least" in outcome else None)
    else:
        assert reply is TYPED_OUTCOMES[command_name][outcome["name"]]


@pytest.mark.parametrize(("command_name", "outcome"), RANGED, ids=lambda v: v["name"] if isinstance(v, dict) else v)
def test_an_outcome_with_a_range_of_codes_takes_every_code_of_it(command_name: str, outcome: dict[str, Any]) -> None:
    # The server replies a figure (the stock left, the units given back): any of them is the outcome.
    decode = RESPONSE_CALLBACKS[command_name]
    for code in (outcome["code_at_least"], outcome["code_at_least"] + 1, 9223372036854775807):
        result = decode(code)
        assert result.outcome is TYPED_OUTCOMES[command_name][outcome["name"]]
        assert getattr(result, FIGURES[command_name]) == code
    assert decode(outcome["code_at_least"] - 1).outcome is not TYPED_OUTCOMES[command_name][outcome["name"]]


def test_item_info_reads_the_contract_fields(fresh: servers.Server) -> None:
    names = [field["name"] for field in CONTRACT["info_fields"]]
    assert [field.name for field in dataclasses.fields(ItemInfo)] == names
    with fresh.client() as client:
        client.execute_command("SECKILL.INIT", "{contract}", 10, "STREAM", "{contract}:orders")
        raw = client.execute_command("SECKILL.INFO", "{contract}")
    # A map under RESP3 (in the server's order), field, value, ... under RESP2; names decoded to str.
    assert (list(raw) if isinstance(raw, dict) else raw[0::2]) == names
    assert item_info(raw).stream == "{contract}:orders"
    # Each field is read from the field of its name: every one gets a value of its own, the flags both ways.
    for flag in (0, 1):
        values = {
            field["name"]: {"integer": 100 + i, "flag": flag, "key or nil": b"s"}[field["type"]]
            for i, field in enumerate(CONTRACT["info_fields"])
        }
        info = item_info([part for name, value in values.items() for part in (name.encode(), value)])
        for field in CONTRACT["info_fields"]:
            expected = {"integer": values[field["name"]], "flag": bool(flag), "key or nil": "s"}[field["type"]]
            assert getattr(info, field["name"]) == expected, field["name"]
