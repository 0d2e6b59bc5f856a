"""History and review (docs/photo.md): a customer's verifications newest first in pages, one by id, and a human
review that changes the verdict (firing `verification.reviewed`); a review that agrees with the verdict changes
nothing and fires nothing; another account's verification is 404."""

from __future__ import annotations

from typing import Any

from tests.peers.receiver import WebhookReceiver
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg

HISTORY = "/api/v1/verifications"


def without_url(verification: dict[str, Any]) -> dict[str, Any]:
    """A verification without its `image_url`, which is signed afresh on every read."""
    return {k: v for k, v in verification.items() if k != "image_url"}


async def test_history_is_newest_first_in_pages(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    made = [(await photo_stack.verify(customer.test_key, jpeg(colour=(s, s, s)))).json()["id"] for s in (1, 2, 3)]
    first = (await photo_stack.call(customer.test_key, "GET", HISTORY, params={"limit": 2})).json()
    assert [item["id"] for item in first["data"]] == made[::-1][:2]
    assert (first["has_more"], first["next_cursor"]) == (True, made[1])
    rest = await photo_stack.call(customer.test_key, "GET", HISTORY, params={"limit": 2, "starting_after": made[1]})
    assert [item["id"] for item in rest.json()["data"]] == [made[0]]
    assert (rest.json()["has_more"], rest.json()["next_cursor"]) == (False, None)


async def test_history_is_per_account_and_environment(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    other = await photo_stack.new_customer()
    theirs = (await photo_stack.verify(other.test_key, jpeg())).json()["id"]
    live = (await photo_stack.verify(customer.live_key, jpeg())).json()["id"]
    sandbox = (await photo_stack.call(customer.test_key, "GET", HISTORY)).json()["data"]
    assert theirs not in {item["id"] for item in sandbox}
    assert live not in {item["id"] for item in sandbox}
    assert [item["id"] for item in (await photo_stack.call(customer.live_key, "GET", HISTORY)).json()["data"]] == [live]
    for verification_id in (theirs, "ver_unknown"):
        response = await photo_stack.call(customer.test_key, "GET", f"{HISTORY}/{verification_id}")
        assert response.status_code == 404
        assert response.json() == {"error": "No verification with that id on this account"}
    cursor = await photo_stack.call(customer.test_key, "GET", HISTORY, params={"starting_after": theirs})
    assert cursor.status_code == 404
    assert cursor.json() == {"error": "starting_after names no verification on this account"}


async def test_bad_page_sizes_are_400(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    for limit in ("0", "101", "ten"):
        response = await photo_stack.call(customer.test_key, "GET", HISTORY, params={"limit": limit})
        assert response.status_code == 400
        assert "error" in response.json()


async def test_get_answers_what_verify_answered(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    verified = (await photo_stack.verify(customer.test_key, jpeg(), "us_passport")).json()
    fetched = (await photo_stack.call(customer.test_key, "GET", f"{HISTORY}/{verified['id']}")).json()
    assert {k: v for k, v in fetched.items() if k != "image_url"} == {
        k: v for k, v in verified.items() if k != "image_url"
    }


async def test_review_changes_the_verdict(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    verified = (await photo_stack.verify(customer.test_key, jpeg())).json()
    assert verified["is_compliant"] is False
    review = f"{HISTORY}/{verified['id']}/review"
    accepted = await photo_stack.call(customer.test_key, "POST", review, json={"is_compliant": True, "note": "ok"})
    assert accepted.status_code == 200
    body = accepted.json()
    assert (body["is_compliant"], body["category"], body["violation_reasons"], body["confidence"]) == (
        True,
        "compliant",
        [],
        1.0,
    )
    assert body["review"]["note"] == "ok"
    assert body["review"]["original_is_compliant"] is False
    fetched = (await photo_stack.call(customer.test_key, "GET", f"{HISTORY}/{verified['id']}")).json()
    assert fetched["is_compliant"] is True
    rejected = await photo_stack.call(customer.test_key, "POST", review, json={"is_compliant": False})
    assert rejected.json()["violation_reasons"] == ["rejected_by_review"]
    assert rejected.json()["review"]["original_is_compliant"] is False


async def test_a_review_that_agrees_with_the_verdict_is_recorded_and_fires_nothing(
    photo_stack: PhotoStack, customer: CustomerKeys, receiver: WebhookReceiver
) -> None:
    """An agreeing review keeps the verdict as judged and fires nothing, but it is recorded with its note, so the
    verification leaves the dashboard's review queue."""
    path = await photo_stack.subscribe(customer.test_key, receiver, ["verification.reviewed"])
    verified = (await photo_stack.verify(customer.test_key, jpeg())).json()
    assert verified["is_compliant"] is False
    one, review = f"{HISTORY}/{verified['id']}", f"{HISTORY}/{verified['id']}/review"
    before = (await photo_stack.call(customer.test_key, "GET", one)).json()

    agreed = await photo_stack.call(customer.test_key, "POST", review, json={"is_compliant": False, "note": "agreed"})
    assert agreed.status_code == 200
    recorded = agreed.json().pop("review")
    assert (recorded["is_compliant"], recorded["note"], recorded["original_is_compliant"]) == (False, "agreed", False)
    assert without_url({**agreed.json(), "review": None}) == without_url(before)  # the verdict as it was judged
    assert (await photo_stack.call(customer.test_key, "GET", one)).json()["review"] == recorded

    # A later review that does change the verdict fires, and it is the only delivery the endpoint gets.
    changed = await photo_stack.call(customer.test_key, "POST", review, json={"is_compliant": True, "note": "changed"})
    assert changed.status_code == 200
    [delivery] = await receiver.wait_for(path, 1)
    assert delivery.verified
    assert delivery.json["type"] == "verification.reviewed"
    assert delivery.json["data"] == changed.json()  # the verification as the review answered it
    assert (changed.json()["is_compliant"], changed.json()["review"]["note"]) == (True, "changed")


async def test_bad_reviews(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    verified = (await photo_stack.verify(customer.test_key, jpeg())).json()
    review = f"{HISTORY}/{verified['id']}/review"
    for body in ({}, {"is_compliant": "yes"}, {"is_compliant": True, "note": "x" * 1001}):
        assert (await photo_stack.call(customer.test_key, "POST", review, json=body)).status_code == 400
    other = await photo_stack.new_customer()
    response = await photo_stack.call(other.test_key, "POST", review, json={"is_compliant": True})
    assert response.status_code == 404
