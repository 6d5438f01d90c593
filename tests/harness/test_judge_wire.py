"""The checker's side of the wire: what the candidate's process sends is parsed as JSON, never executed,
and checked for shape before anyone reads it."""

import pickle
import struct

import pytest

from kernelseek.harness.wire import MAX_REPLY, Peer, WireError, expect_reply, number, pair


def frame(payload: bytes) -> bytes:
    return struct.pack("<I", len(payload)) + payload


@pytest.fixture
def ends():
    checker, host = pair()
    yield Peer(checker), host
    checker.close()
    host.close()


def test_a_reply_round_trips(ends):
    checker, host = ends
    Peer(host).reply({"reply": "called", "status": 0})
    assert expect_reply(checker.take_reply(1), "called", {"status": int}) == {"reply": "called", "status": 0}


@pytest.mark.parametrize("payload, why", [
    (pickle.dumps({"reply": "timed"}), "not JSON"),  # a pickle is never unpickled on this side
    (b"[1, 2]", "not an object"),
])
def test_a_reply_that_is_not_a_json_object_is_refused(ends, payload, why):
    checker, host = ends
    host.sendall(frame(payload))
    with pytest.raises(WireError, match=why):
        checker.take_reply(1)


def test_an_oversized_reply_is_refused_before_it_is_read(ends):
    checker, host = ends
    host.sendall(struct.pack("<I", MAX_REPLY + 1))
    with pytest.raises(WireError, match="bytes"):
        checker.take_reply(1)


def test_silence_and_a_closed_end_are_errors(ends):
    checker, host = ends
    with pytest.raises(WireError, match="no message"):
        checker.take_reply(0.1)
    host.close()
    with pytest.raises(WireError, match="closed"):
        checker.take_reply(1)


@pytest.mark.parametrize("message", [{"reply": "other", "status": 0}, {"reply": "called", "status": "0"},
                                     {"reply": "called", "status": True}, {"reply": "called"}])
def test_a_reply_of_the_wrong_shape_is_refused(message):
    with pytest.raises(WireError):
        expect_reply(message, "called", {"status": int})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), True, "1e-6", None, -1.0])
def test_times_must_be_positive_finite_numbers(value):
    with pytest.raises(WireError):
        number(value, "time", positive=True)


def test_parked_values_keep_their_views():
    """The checker moves large checked values off the card during timing (child._park); packed views of
    one storage and their strides must come back as they were."""
    import torch

    from kernelseek.harness.canary import Guarded
    from kernelseek.harness.child import _park, _unpark

    packed = torch.randn(4, 3, 8)
    values = Guarded({"q": packed[:, 0], "k": packed[:, 1], "scale": 0.5}, pattern=7)
    reference = ({"out": torch.ones(4, 8)}, {"out_max": 1e-3}, "torch's error")
    parked = _park((values, reference), limit=0)
    assert not isinstance(parked[0], Guarded)
    back, (expected, allowed, source) = _unpark(parked, "cpu")
    for key in ("q", "k"):
        assert torch.equal(back.values[key], values.values[key])
        assert back.values[key].stride() == values.values[key].stride() == (24, 1)
    assert back.values["q"].untyped_storage().data_ptr() == back.values["k"].untyped_storage().data_ptr()
    assert back.values["scale"] == 0.5 and torch.equal(expected["out"], reference[0]["out"])
