"""agentsim.Env: the Gymnasium API, the checker on every built-in world, errors."""

import functools
import json
import subprocess

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

import agentsim


@pytest.mark.parametrize("env_id", sorted(agentsim.ENV_IDS))
def test_check_env_passes_on_every_builtin_world(env_id):
    env = gymnasium.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)


def test_check_env_passes_on_a_scripted_world_with_layers(root):
    scenario = str(root / "examples" / "worlds" / "helpdesk" / "helpdesk.ron")
    env = agentsim.Env(scenario, layers=str(root / "seeds" / "stacks" / "retry.ron"))
    check_env(env, skip_render_check=True)
    assert "update_ticket" in env.tools.names


def test_a_recorded_episode_is_an_incident_that_replays(tmp_path, cli, root, example_agent):
    env = agentsim.Env("support_desk", record=True, layers="resilient")
    drive(env, 4, example_agent())
    env.save_incident(tmp_path / "episode.ron")
    replay = subprocess.run([cli, "replay", str(tmp_path / "episode.ron")], cwd=root, capture_output=True, text=True)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    plain = agentsim.Env("support_desk")
    drive(plain, 4, example_agent())
    with pytest.raises(ValueError, match="^record"):
        plain.save_incident(tmp_path / "no.ron")


def test_every_builtin_world_is_registered():
    assert set(agentsim.ENV_IDS.values()) == set(agentsim.builtin_scenarios())
    assert "agentsim/SupportDesk-v0" in agentsim.ENV_IDS


def drive(env, seed, agent):
    obs, info = env.reset(seed=seed)
    assert obs["kind"] == "user_message" and "Tools:" in obs["text"]
    steps = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(info["observation"]))
        steps += 1
        assert obs["text"].isascii()
        if terminated or truncated:
            return reward, terminated, truncated, info, steps
        assert reward == 0.0


def test_the_example_agent_meets_the_world_of_the_external_protocol(example_agent):
    # docs/protocol.md's exchange: seed 1, the same digest as `--agent cmd:`.
    env = agentsim.Env("support_desk")
    reward, terminated, truncated, info, steps = drive(env, 1, example_agent())
    assert (reward, terminated, truncated, steps) == (1.0, True, False, 8)
    assert info["outcome"] == "success"
    assert info["digest"] == "91df7ee41dc931ed13fad8bbd1bda262"
    assert info["milestone"] == "customer_told"
    assert info["minefields"] == ""
    assert info["tool_calls"] == 5 and info["turns"] == 8
    assert "verdict" in info


def test_layers_stand_between_the_agent_and_the_tools(example_agent):
    plain = drive(agentsim.Env("support_desk", fault_scale=2.0), 3, example_agent())[3]
    layered = drive(agentsim.Env("support_desk", fault_scale=2.0, layers="resilient"), 3, example_agent())[3]
    assert plain["digest"] != layered["digest"]


def test_reset_is_deterministic_and_info_carries_the_protocol_observation():
    env = agentsim.Env("flight_booking")
    a, info_a = env.reset(seed=7)
    b, info_b = env.reset(seed=7)
    assert a == b
    assert info_a["observation"]["protocol"] == agentsim.PROTOCOL
    assert json.loads(a["json"]) == info_a["observation"]
    assert env.observation_space.contains(a)


def test_tools_in_function_calling_shapes():
    env = agentsim.Env("support_desk")
    assert env.tools.names[:3] == ["lookup_order", "get_customer", "issue_refund"]
    openai = env.tools.openai[0]
    assert openai["type"] == "function"
    assert openai["function"]["name"] == "lookup_order"
    assert openai["function"]["parameters"]["required"] == ["order_id"]
    anthropic = env.tools.anthropic[0]
    assert set(anthropic) == {"name", "description", "input_schema"}
    assert anthropic["input_schema"]["type"] == "object"
    assert agentsim.tools("newsroom").names == agentsim.Env("newsroom").tools.names


def test_a_tool_call_from_an_llm_becomes_an_action():
    from agentsim.observation import call

    assert call("lookup_order", '{"order_id": "A1"}') == {
        "action": "call",
        "tool": "lookup_order",
        "args": {"order_id": "A1"},
    }
    with pytest.raises(ValueError, match="arguments"):
        call("lookup_order", "{not json")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"scenario": "no_such_world"}, "scenario"),
        ({"scenario": "/nonexistent/dir/"}, "scenario"),
        ({"fault_scale": -1.0}, "fault_scale"),
        ({"fault_scale": float("nan")}, "fault_scale"),
        ({"layers": "no_such_preset"}, "layers"),
        ({"tasks": "all"}, "tasks"),
        ({"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_arguments_raise_value_error_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=f"^{field}"):
        agentsim.Env(**kwargs)


#: A list nested 15 deep: as an argument, 17 levels with the action and its args.
NESTED_15 = functools.reduce(lambda v, _: [v], range(15), 1)


@pytest.mark.parametrize(
    "action, message",
    [
        ({"action": "call", "tool": "nope"}, "unknown tool `nope`"),
        ({"action": "call", "tool": "lookup_order", "args": [1]}, "field `args`"),
        ({"action": "fly"}, "action"),
        ({"tool": "lookup_order"}, "missing field `action`"),
        ({"action": "call", "tool": "issue_refund", "args": {"order_id": "A1", "amount_cents": 1.5}}, "amount_cents"),
        ({"action": "sleep", "until_ms": -5}, "until_ms"),
        ({"action": "finish", "think_ms": "soon"}, "think_ms"),
        (5, "expected a dict"),
        ([], "expected a dict"),
        ("{not json", "not JSON"),
        ({"action": "call", "tool": "lookup_order", "args": {"order_id": float("nan")}}, "not JSON"),
        ({"action": "call", "tool": "lookup_order", "args": {"order_id": object()}}, "not JSON"),
        ({"action": "call", "tool": "lookup_order", "args": {"a": NESTED_15}}, "too deeply"),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "too deeply"),
    ],
)
def test_an_action_of_the_wrong_shape_raises_value_error_and_leaves_the_episode(action, message):
    env = agentsim.Env("support_desk")
    first, _ = env.reset(seed=0)
    with pytest.raises(ValueError, match="^action") as raised:
        env.step(action)
    assert message in str(raised.value)
    # The episode is where it was: a good action still works.
    obs, _, terminated, _, _ = env.step({"action": "call", "tool": "lookup_order", "args": {"order_id": "A1001"}})
    assert obs["kind"] == "tool_result" and not terminated


def test_step_before_reset_and_after_the_end():
    env = agentsim.Env("support_desk")
    with pytest.raises(agentsim.ResetNeeded):
        env.step({"action": "idle"})
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step({"action": "finish", "outcome": "gave_up"})
    assert (obs["kind"], reward, terminated, truncated) == ("end", 0.0, True, False)
    assert info["outcome"] == "gave_up"
    with pytest.raises(agentsim.EpisodeEnded):
        env.step({"action": "idle"})
    assert issubclass(agentsim.EpisodeEnded, ValueError)


def test_a_wait_past_the_horizon_truncates():
    env = agentsim.Env("support_desk")
    env.reset(seed=0)
    _, reward, terminated, truncated, info = env.step({"action": "sleep", "until_ms": 10**12})
    assert info["outcome"] == "horizon"
    assert (reward, terminated, truncated) == (0.0, False, True)


def test_a_recorded_episode_has_a_timeline(example_agent):
    env = agentsim.Env("support_desk", record=True)
    drive(env, 1, example_agent())
    timeline = env.timeline()
    assert "END           success" in timeline


def test_an_abandoned_episode_ends_quietly():
    env = agentsim.Env("weather_dining")
    for seed in range(20):
        env.reset(seed=seed)  # each reset drops the previous episode mid-run
    env.close()
