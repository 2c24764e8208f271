"""Live subscriptions and connection reuse of the client library (buzz-cli.md §12)."""

import asyncio

import pytest

from orchestra.buzz import EOSE, BuzzError


async def next_item(subscription, wait_seconds: float = 10.0):
    return await asyncio.wait_for(anext(subscription), wait_seconds)


async def test_stored_then_eose_then_live_then_close(make_client):
    owner, poster = make_client(), make_client()
    channel = (await owner.channels_create(name="live"))["channel_id"]
    await poster.channels_join(channel=channel)
    stored = await owner.messages_send(channel=channel, content="before")
    filters = [{"kinds": [9], "#h": [channel]}]
    async with owner.subscribe(filters, sub_id="acp-ch-test") as subscription:
        assert (await next_item(subscription))["id"] == stored["event_id"]
        assert await next_item(subscription) is owner.EOSE is EOSE
        live = await poster.messages_send(channel=channel, content="live, no mention")
        assert (await next_item(subscription))["id"] == live["event_id"]
        connection = await owner.connection()
        assert "acp-ch-test" in connection._subscriptions
    assert "acp-ch-test" not in connection._subscriptions
    # The same connection keeps serving later operations.
    assert len(await owner.messages_get(channel=channel)) == 2
    assert await owner.connection() is connection


async def test_closed_subscription_raises_the_relay_refusal(make_client):
    owner, stranger = make_client(), make_client()
    channel = (await owner.channels_create(name="private", visibility="private"))["channel_id"]
    subscription = stranger.subscribe([{"kinds": [9], "#h": [channel]}])
    with pytest.raises(BuzzError) as caught:
        await next_item(subscription)
    assert (caught.value.error, caught.value.message) == (
        "auth_error",
        "restricted: not a channel member",
    )


async def test_drop_without_reconnect_raises_retryable_error(make_client, start_relay):
    relay = await asyncio.to_thread(start_relay)
    client = make_client(url=relay.url)
    async with client.subscribe([{"kinds": [1]}]) as subscription:
        assert await next_item(subscription) is EOSE
        await asyncio.to_thread(relay.stop)
        with pytest.raises(BuzzError) as caught:
            await next_item(subscription)
    assert caught.value.error == "network_error" and caught.value.retryable is True


async def test_reconnect_resubscribes_without_losing_or_repeating_events(make_client, start_relay):
    relay = await asyncio.to_thread(start_relay)
    owner, poster = make_client(url=relay.url), make_client(url=relay.url)
    channel = (await owner.channels_create(name="resilient"))["channel_id"]
    await poster.channels_join(channel=channel)
    first = await poster.messages_send(channel=channel, content="first")
    drops: list[str] = []
    subscription = owner.subscribe(
        [{"kinds": [9], "#h": [channel]}],
        reconnect=True,
        backoff=(0.2, 0.5),
        on_disconnect=drops.append,
    )
    async with subscription:
        assert (await next_item(subscription))["id"] == first["event_id"]
        assert await next_item(subscription) is EOSE
        await asyncio.to_thread(relay.restart)
        # Published while the subscriber is still reconnecting: must still be delivered once.
        second = await poster.messages_send(channel=channel, content="second")
        third = await poster.messages_send(channel=channel, content="third")
        received = [(await next_item(subscription, 30))["id"] for _ in range(2)]
    # Live order, or newest-first when they came with the re-subscription's stored events.
    assert sorted(received) == sorted([second["event_id"], third["event_id"]])
    assert drops and subscription.reconnects == 1
    # Plain operations reopen the dropped connection transparently as well.
    assert len(await owner.messages_get(channel=channel)) == 3


async def test_leaving_async_for_early_sends_close(make_client):
    owner = make_client()
    channel = (await owner.channels_create(name="break"))["channel_id"]
    await owner.messages_send(channel=channel, content="one")
    connection = await owner.connection()
    async for item in owner.subscribe([{"kinds": [9], "#h": [channel]}], sub_id="brief"):
        assert item["content"] == "one"
        assert "brief" in connection._subscriptions
        break
    await asyncio.sleep(0)  # the loop finalises the abandoned iterator on its next turn
    for _ in range(10):
        if "brief" not in connection._subscriptions:
            break
        await asyncio.sleep(0.01)
    assert "brief" not in connection._subscriptions


async def test_concurrent_operations_share_one_connection(make_client):
    owner = make_client()
    channel = (await owner.channels_create(name="busy"))["channel_id"]
    connection = await owner.connection()
    sent = await asyncio.gather(
        *(owner.messages_send(channel=channel, content=f"m{i}") for i in range(20)),
        owner.users_set_profile(name="Busy"),
        owner.mem_set(slug="core", value="x"),
    )
    assert len({result["event_id"] for result in sent}) == 22
    history, members = await asyncio.gather(
        owner.messages_get(channel=channel, all=True), owner.channels_members(channel=channel)
    )
    assert len(history) == 20 and members[0]["name"] == "Busy"
    assert await owner.connection() is connection


async def test_closing_the_client_ends_a_reconnecting_subscription(make_client):
    client = make_client()
    # Its own notes: none are stored, whatever earlier tests left on the shared relay.
    own_notes = {"kinds": [1], "authors": [client.pubkey]}
    subscription = client.subscribe([own_notes], reconnect=True, backoff=(0.05,))
    async with subscription:
        assert await next_item(subscription) is EOSE
        await client.close()
        with pytest.raises(BuzzError) as caught:
            await next_item(subscription)
    assert caught.value.error == "network_error"
    assert client.closed and subscription.reconnects == 0
