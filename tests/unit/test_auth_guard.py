"""AuthGuard: checks off the event loop, remembered successes, uniform failures, back-off."""

from __future__ import annotations

import asyncio
import base64
import threading
from typing import Any

import pytest

from connectrt.listener import auth as auth_module
from connectrt.listener.auth import Authenticator, Principal, hash_password
from connectrt.listener.auth_guard import AuthGuard, Verdict


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Sleeps:
    """Records the back-off delays instead of waiting them out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_guard(users: dict[str, str] | None = None, **options: Any) -> AuthGuard:
    users = users if users is not None else {"alice": hash_password("pw", iterations=1000)}
    return AuthGuard(Authenticator("basic", users=users), **options)


def admit(guard: AuthGuard, header: str | None) -> Verdict:
    return asyncio.run(guard.admit(header))


def test_the_check_runs_on_the_auth_thread_pool_not_the_event_loop():
    seen: list[str] = []

    class Recording(Authenticator):
        def authenticate(self, authorization: str | None) -> Principal | None:
            seen.append(threading.current_thread().name)
            return super().authenticate(authorization)

    users = {"alice": hash_password("pw", iterations=1000)}
    guard = AuthGuard(Recording("basic", users=users))

    async def run() -> tuple[Verdict, str]:
        return await guard.admit(basic("alice", "pw")), threading.current_thread().name

    verdict, loop_thread = asyncio.run(run())
    assert verdict is Verdict.ADMIT
    assert len(seen) == 1 and seen[0].startswith("auth-check") and seen[0] != loop_thread


def test_successes_are_remembered_until_they_expire():
    clock = Clock()
    guard = make_guard(clock=clock, cache_ttl=60.0)
    header = basic("alice", "pw")
    assert [admit(guard, header) for _ in range(5)] == [Verdict.ADMIT] * 5
    assert guard.checks == 1
    clock.now += 59
    assert admit(guard, header) is Verdict.ADMIT and guard.checks == 1
    clock.now += 2  # past the 60 s
    assert admit(guard, header) is Verdict.ADMIT and guard.checks == 2
    assert admit(guard, basic("alice", "nope")) is Verdict.DENY and guard.checks == 3
    assert admit(guard, basic("alice", "nope")) is Verdict.DENY and guard.checks == 4  # failures
    # are never remembered


def test_a_remembered_success_never_outlives_a_credentials_change():
    guard = make_guard()
    header = basic("alice", "pw")
    assert admit(guard, header) is Verdict.ADMIT
    guard.auth.users["alice"] = hash_password("new", iterations=1000)  # password changed
    assert admit(guard, header) is Verdict.DENY
    assert admit(guard, basic("alice", "new")) is Verdict.ADMIT
    del guard.auth.users["alice"]  # user removed
    assert admit(guard, basic("alice", "new")) is Verdict.DENY
    assert guard.remembered == 0


def test_bearer_successes_follow_the_token_file():
    auth = Authenticator("bearer", token_hashes={auth_module.hash_token("t1")})
    guard = AuthGuard(auth)
    assert admit(guard, "Bearer t1") is Verdict.ADMIT and guard.checks == 1
    assert admit(guard, "Bearer t1") is Verdict.ADMIT and guard.checks == 1
    auth.token_hashes.clear()
    assert admit(guard, "Bearer t1") is Verdict.DENY


def test_the_cache_is_bounded():
    users = {f"u{i}": hash_password("pw", iterations=1000) for i in range(6)}
    guard = make_guard(users, cache_size=3)
    for i in range(6):
        assert admit(guard, basic(f"u{i}", "pw")) is Verdict.ADMIT
    assert guard.remembered == 3
    assert admit(guard, basic("u5", "pw")) is Verdict.ADMIT and guard.checks == 6  # kept
    assert admit(guard, basic("u0", "pw")) is Verdict.ADMIT and guard.checks == 7  # dropped


def test_unknown_users_cost_a_check_as_expensive_as_known_ones(monkeypatch: pytest.MonkeyPatch):
    real = auth_module.hashlib.pbkdf2_hmac
    iterations: list[int] = []

    def counting(name: str, password: bytes, salt: bytes, rounds: int) -> bytes:
        iterations.append(rounds)
        return real(name, password, salt, rounds)

    monkeypatch.setattr(auth_module.hashlib, "pbkdf2_hmac", counting)
    auth = Authenticator("basic", users={"alice": hash_password("pw", iterations=3000)})
    iterations.clear()
    assert auth.authenticate(basic("alice", "wrong")) is None
    assert auth.authenticate(basic("mallory", "wrong")) is None
    assert auth.authenticate(basic("mallory", "")) is None
    assert iterations == [3000, 3000, 3000]


def test_failures_of_one_user_are_slowed_exponentially_up_to_the_bound():
    sleeps = Sleeps()
    guard = make_guard(sleep=sleeps, base_delay=0.1, max_delay=2.0)
    for _ in range(8):
        assert admit(guard, basic("alice", "wrong")) is Verdict.DENY
    # The first failure is answered at once, then 0.1 s doubling, capped at 2 s.
    assert sleeps.delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0])
    assert guard.delay_for("user:alice") == 2.0
    assert guard.delay_for("user:bob") == 0  # other users are not slowed


def test_a_correct_password_is_never_delayed_by_failures():
    sleeps = Sleeps()
    guard = make_guard(sleep=sleeps, cache_ttl=0)  # nothing remembered: every request checked
    for _ in range(300):
        admit(guard, basic("alice", "wrong"))
    before = len(sleeps.delays)
    for _ in range(3):
        assert admit(guard, basic("alice", "pw")) is Verdict.ADMIT
    assert len(sleeps.delays) == before  # no wait before or after the check
    # A success does not clear the record: the attacker's next guess is still slowed.
    assert admit(guard, basic("alice", "guess")) is Verdict.DENY
    assert sleeps.delays[-1] == pytest.approx(2.0)


def test_missing_credentials_do_not_count_as_failures():
    guard = make_guard(sleep=Sleeps())
    for _ in range(5):
        assert admit(guard, None) is Verdict.DENY
    assert guard.tracked == 0 and guard.checks == 0


def test_failures_are_forgotten_after_a_quiet_period():
    clock = Clock()
    guard = make_guard(sleep=Sleeps(), clock=clock, forget_after=60.0)
    for _ in range(4):
        admit(guard, basic("alice", "wrong"))
    assert guard.delay_for("user:alice") == pytest.approx(0.8)
    clock.now += 61
    assert guard.delay_for("user:alice") == 0 and guard.tracked == 0


def test_the_failure_record_is_bounded():
    guard = make_guard(sleep=Sleeps(), tracked_subjects=10)
    for i in range(40):
        admit(guard, basic(f"user{i}", "wrong"))
    assert guard.tracked == 10
    assert guard.delay_for("user:user39") > 0 and guard.delay_for("user:user0") == 0


def test_bearer_failures_share_one_subject():
    auth = Authenticator("bearer", token_hashes={auth_module.hash_token("t1")})
    sleeps = Sleeps()
    guard = AuthGuard(auth, sleep=sleeps, cache_ttl=0)
    for i in range(3):
        assert admit(guard, f"Bearer guess{i}") is Verdict.DENY
    assert sleeps.delays == pytest.approx([0.1, 0.2])
    assert admit(guard, "Bearer t1") is Verdict.ADMIT and len(sleeps.delays) == 2


def test_no_back_off_when_disabled():
    sleeps = Sleeps()
    guard = make_guard(sleep=sleeps, max_delay=0)
    for _ in range(5):
        admit(guard, basic("alice", "wrong"))
    assert sleeps.delays == [] and guard.tracked == 0


def test_too_many_pending_checks_are_refused_without_checking():
    guard = make_guard(max_pending=0)
    assert admit(guard, basic("alice", "pw")) is Verdict.BUSY and guard.checks == 0


@pytest.mark.parametrize(
    "stored",
    ["pbkdf2_sha256$many$c2FsdA==$ZGlnZXN0", "pbkdf2_sha256$1000$not base64!$x", "plain", ""],
)
def test_a_malformed_stored_hash_refuses_instead_of_failing(stored: str):
    guard = make_guard({"bob": stored})
    assert admit(guard, basic("bob", "pw")) is Verdict.DENY
