"""`--batch-api` pays once: a batch the API may hold (a kill or an uncertain failure while it was being created) is
never sent again on its own, but quarantined for `distill batches retry|discard`; a definite refusal goes back to
pending. The real CLI and SDK against the fake API, and a real killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest
from conftest import distill, ingested, wait_for
from fakeapi import candidate

from distiller.batches import files as batches
from distiller.batches import model as batch_model


def creates(fake) -> int:
    return sum(r.method == "POST" and r.path == "/v1/messages/batches" for r in fake.requests)


def listed(api) -> list[dict]:
    return orjson.loads(distill("--json", "batches", "list", env=api, check=True).stdout)["batches"]


def assert_quarantined_not_resent(api, fake_anthropic, settings, batch_id: str) -> None:
    """The next run sends nothing for the batch the API may hold: it is quarantined, its messages recorded."""
    resumed = distill("--json", "run", "--batch-api", env=api)
    assert resumed.returncode == 0, resumed.stderr
    assert "may already be billed" in resumed.stderr and f"distill batches retry {batch_id}" in resumed.stderr
    assert fake_anthropic.message_requests() == [] and creates(fake_anthropic) == 1
    assert batches.load_all(settings.state_dir) == [] and len(ingested(settings)) == 3
    (row,) = listed(api)
    assert (row["batch_id"], row["status"]) == (batch_id, "quarantined") and "may already be billed" in row["error"]


@pytest.mark.parametrize("status,error_type", [(500, "api_error"), (529, "overloaded_error")])
def test_an_uncertain_create_failure_is_quarantined_not_sent_again(api, fake_anthropic, transcript, settings,
                                                                    status, error_type):
    fake_anthropic.create_failures.append((status, error_type, True))  # the API made the batch all the same
    failed = distill("--json", "run", "--batch-api", env=api)
    assert failed.returncode == 75 and "may have been created" in failed.stderr
    assert creates(fake_anthropic) == 1  # not retried by the SDK either: it could make a second batch
    (saved,) = batches.load_all(settings.state_dir)
    assert saved.status == batch_model.SUBMITTING and saved.remote_id is None
    (row,) = listed(api)
    assert row["status"] == "submitting" and "may already be billed" in row["error"]
    assert_quarantined_not_resent(api, fake_anthropic, settings, saved.batch_id)
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    retried = distill("--json", "batches", "retry", saved.batch_id, env=api)
    assert retried.returncode == 0, retried.stderr
    assert len(fake_anthropic.message_requests()) == 1 and listed(api) == []


@pytest.mark.parametrize("status,error_type", [(400, "invalid_request_error"), (429, "rate_limit_error")])
def test_a_refused_create_goes_back_to_pending(api, fake_anthropic, transcript, settings, status, error_type):
    fake_anthropic.create_failures.append((status, error_type, False))
    failed = distill("--json", "run", "--batch-api", env=api)
    assert failed.returncode != 0 and creates(fake_anthropic) == 1
    (saved,) = batches.load_all(settings.state_dir)
    assert saved.status == batch_model.PENDING
    fake_anthropic.enqueue_candidates([candidate("m2", "live in Lisbon", "The user lives in Lisbon.")])
    resumed = distill("--json", "run", env=api)  # nothing was created: extracting it now pays once
    assert resumed.returncode == 0, resumed.stderr
    assert orjson.loads(resumed.stdout)["resumed_batches"] == 1 and len(fake_anthropic.message_requests()) == 1


@pytest.mark.slow
def test_a_run_killed_while_the_api_creates_its_batch_pays_once(api, fake_anthropic, transcript, settings):
    created = fake_anthropic._create_batch

    def slow_create(body):  # the API has the batch; the run is killed before it hears back
        reply = created(body)
        time.sleep(30)
        return reply

    fake_anthropic._create_batch = slow_create
    run = subprocess.Popen([sys.executable, "-m", "distiller", "run", "--batch-api"], env={**os.environ, **api},
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(fake_anthropic._batches) == 1, "the batch created at the API")
        run.send_signal(signal.SIGKILL)
        run.wait(60)
    finally:
        run.kill()
    fake_anthropic._create_batch = created
    (saved,) = batches.load_all(settings.state_dir)
    assert saved.status == batch_model.SUBMITTING
    assert_quarantined_not_resent(api, fake_anthropic, settings, saved.batch_id)


def test_batch_ids_past_9999_are_accepted_and_ordered_by_number(transcript, settings):
    assert distill("--json", "run", "--no-llm", env={}, check=True).returncode == 0
    (staged,) = batches.load_all(settings.state_dir)
    run = staged.batch_id[:12]
    for number in (9999, 10000, 10001, 99999, 100000):
        batches.write(settings.state_dir, batch_model.Batch(**{**staged.__dict__, "batch_id": f"{run}-{number}"}))
    batches.path_of(settings.state_dir, staged.batch_id).unlink()
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [
        f"{run}-{n}" for n in (9999, 10000, 10001, 99999, 100000)]
    assert batches.checked_id(f"{run}-10000-r2") == f"{run}-10000-r2"
    with pytest.raises(batches.BadBatchId):
        batches.checked_id(f"{run}-123")
    discarded = distill("--json", "batches", "discard", f"{run}-10001", env={}, check=True)
    assert orjson.loads(discarded.stdout)  # the batch and the ones made after it, not the ones before
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [f"{run}-9999", f"{run}-10000"]


def test_discarding_takes_its_own_runs_later_batches_only_and_what_may_be_billed_only_with_yes(transcript,
                                                                                                settings):
    assert distill("--json", "run", "--no-llm", env={}, check=True).returncode == 0
    (staged,) = batches.load_all(settings.state_dir)
    run, other = staged.batch_id[:12], "f" * 12  # another run's id sorts after this one's
    fields = staged.__dict__
    batches.write(settings.state_dir, batch_model.Batch(**{**fields, "batch_id": f"{run}-0002",
                                                         "status": batch_model.SUBMITTED, "remote_id": "msgbatch_1"}))
    batches.write(settings.state_dir, batch_model.Batch(**{**fields, "batch_id": f"{other}-0001"}))
    refused = distill("--json", "batches", "discard", staged.batch_id, env={})
    assert refused.returncode == 1 and refused.stdout == "", refused.stderr
    assert f"batch {run}-0002 was submitted to the Message Batches API: it may be billed" in refused.stderr
    assert "pass --yes to discard anyway" in refused.stderr and "Traceback" not in refused.stderr
    assert len(batches.load_all(settings.state_dir)) == 3  # nothing discarded
    discarded = distill("--json", "batches", "discard", staged.batch_id, "--yes", env={}, check=True)
    assert orjson.loads(discarded.stdout)["discarded"] == [staged.batch_id, f"{run}-0002"]
    assert f"discarded batch {run}-0002 was submitted to the Message Batches API: it may be billed" in discarded.stderr
    assert "discarded batch " + staged.batch_id not in discarded.stderr  # staged for an agent: nothing paid
    assert [b.batch_id for b in batches.load_all(settings.state_dir)] == [f"{other}-0001"]
