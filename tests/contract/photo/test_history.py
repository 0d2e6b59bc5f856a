"""History and review (DESIGN.md, photo): a customer's verifications newest first in pages, one by id, and a human
review that changes the verdict (firing `verification.reviewed`); another account's verification is 404."""

from __future__ import annotations

from tests.photo_stack import CustomerKeys, PhotoStack, jpeg

HISTORY = "/api/v1/verifications"


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


async def test_bad_reviews(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    verified = (await photo_stack.verify(customer.test_key, jpeg())).json()
    review = f"{HISTORY}/{verified['id']}/review"
    for body in ({}, {"is_compliant": "yes"}, {"is_compliant": True, "note": "x" * 1001}):
        assert (await photo_stack.call(customer.test_key, "POST", review, json=body)).status_code == 400
    other = await photo_stack.new_customer()
    response = await photo_stack.call(other.test_key, "POST", review, json={"is_compliant": True})
    assert response.status_code == 404
