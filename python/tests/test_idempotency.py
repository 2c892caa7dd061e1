"""Idempotency keys through the Python API: the same refund sent twice with the
same key is applied once."""

import json

import agentsim


def refund_ids(key):
    env = agentsim.Env("support_desk", fault_scale=0.0)
    env.reset(seed=0)
    action = {"action": "call", "tool": "issue_refund", "args": {"order_id": "A1001", "amount_cents": 1299}}
    if key is not None:
        action["idempotency_key"] = key
    ids = []
    for _ in range(2):
        obs, _, _, _, _ = env.step(action)
        ids.append(json.loads(obs["json"])["event"]["body"]["refund_id"])
    return ids


def test_the_same_refund_with_the_same_key_is_charged_once():
    assert refund_ids("refund-A1001-1") == ["R9001", "R9001"]
    assert refund_ids(None) == ["R9001", "R9002"]
