from tests.conftest import Stack
from tests.contract.helpers import person


async def test_sandbox_verify_returns_a_completed_result(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    response = await stack.verify(tenant.test_key, person())
    assert response.status_code == 200, response.text
    assert response.json()["result_state"] == "completed"
