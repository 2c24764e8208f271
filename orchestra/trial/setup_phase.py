"""The setup phase (orchestrator.md §7.2 steps 2-10): identities, the environment with its
fixture files, the trial channel and its members, profiles and memories, then the agents."""

from __future__ import annotations

import asyncio
import functools
import time
from pathlib import PurePath

from orchestra.config.manifest import AgentSlot
from orchestra.documents.enums import ErrorType
from orchestra.jsonio import write_text_atomic
from orchestra.nostr.keys import Keys
from orchestra.processes import first_of
from orchestra.trial import relay_ops
from orchestra.trial.capture import EVERYTHING, TrialCapture, channel_only
from orchestra.trial.completion import describe_exit
from orchestra.trial.context import JobContext
from orchestra.trial.env.protocol import EnvCommandError, TrialEnvironment
from orchestra.trial.errors import TrialError, classified
from orchestra.trial.eventlog import EventLogFollower
from orchestra.trial.fixture_files import render_fixture_files
from orchestra.trial.harbor_solve import harbor_solve_script
from orchestra.trial.identities import Identity, derive_fixture_keys, trial_user
from orchestra.trial.launch import agent_process_environment, oracle_registration
from orchestra.trial.observer import ChannelObserver
from orchestra.trial.prompts import TeamMember, compose_roster_prompt
from orchestra.trial.record import write_result
from orchestra.trial.redact import trial_secrets
from orchestra.trial.state import TrialState
from orchestra.trial.written_files import snapshot

SETUP_SECONDS = 300.0
READINESS_SECONDS = 60.0


async def set_up(state: TrialState, ctx: JobContext) -> None:
    """Steps 2-10, within 300 s in all (§7.1)."""
    try:
        async with asyncio.timeout(SETUP_SECONDS):
            mint_identities(state, ctx)
            await prepare_environment(state, with_solution=ctx.condition.uses_oracle)
            with classified(ErrorType.PROVISIONING_ERROR):
                await create_channel(state, ctx)
                await add_members_and_profiles(state, ctx)
            with classified(ErrorType.FIXTURE_SETUP_ERROR):
                await seed_memories(state)
            await launch_agents(state, ctx)
            await wait_until_ready(state)
    except TimeoutError:
        raise TrialError(ErrorType.INTERNAL_ERROR, f"setup exceeded {SETUP_SECONDS:g} s") from None


def mint_identities(state: TrialState, ctx: JobContext) -> None:
    """Step 2: fresh agent keys, the trial user and the fixture's directory identities."""
    owner, fixture, setup = ctx.state.owner.secret, state.task.fixture, state.setup
    setup.agent_keys = {slot.agent_id: Keys.generate() for slot in state.slots}
    setup.user = trial_user(
        owner_secret=owner,
        user_secret=ctx.state.user.secret,
        short_name=state.task.short_name,
        user_display_name=fixture.user_display_name,
    )
    setup.directory = [
        (entry, Identity(entry.name, entry.role, derive_fixture_keys(owner, entry.key)))
        for entry in fixture.directory_entries()
    ]


async def prepare_environment(state: TrialState, *, with_solution: bool) -> None:
    """Step 3: the sandbox or container, the fixture's files and (oracle) the solution."""
    env, paths = state.env, state.env.facts.paths
    with classified(ErrorType.ENVIRONMENT_START_ERROR):
        state.paths.buzz_dir.mkdir(parents=True, exist_ok=True)
        await env.prepare()
    with classified(ErrorType.FIXTURE_SETUP_ERROR):
        state.setup.fixture_files = rendered_files = render_fixture_files(
            state.paths, state.task.fixture
        )
        for rendered in rendered_files:
            spec = rendered.spec
            await env.put_file(rendered.record, paths.fixture_file(spec.path), mode=spec.mode_bits)
    if with_solution:
        with classified(ErrorType.ENVIRONMENT_START_ERROR):
            await env.put_tree(state.task.paths.solution_dir, paths.solution)
            (await env.exec(["chmod", "+x", str(paths.solve_sh)])).check("chmod +x solve.sh")
            if state.task.is_harbor:
                write_text_atomic(state.paths.harbor_solve_record, harbor_solve_script(paths))
                await env.put_file(state.paths.harbor_solve_record, paths.harbor_solve, mode=0o755)


async def create_channel(state: TrialState, ctx: JobContext) -> None:
    """Step 4: the trial's capture (§8.9), then the private trial channel, its registry row,
    and its subscription."""
    name = f"{state.task.short_name}-{state.trial_id[:8]}"
    description = (
        f"run={ctx.job_name} trial={state.trial_id} manifest={ctx.condition.manifest_sha256}"
    )
    since = int(time.time()) - 5
    user_client, setup = state.user_client(ctx), state.setup
    assert setup.user is not None
    setup.capture = capture = TrialCapture(since, state.notify, ctx.stack.database_url)
    limit = await capture.open_window()
    if limit is not None:
        state.recorder.log(f"relay_events: only what the trial's identities may read ({limit})")
    for slot in state.slots:
        await capture.add(slot.agent_id, state.agent_client(slot.agent_id), EVERYTHING)
    setup.channel_id = channel_id = await relay_ops.create_trial_channel(
        user_client, name=name, description=description
    )
    setup.channel_name = name
    state.recorder.log(f"channel {channel_id} ({name})")
    write_result(state)
    await ctx.registry.record_trial(
        run_id=ctx.job_name,
        trial_id=state.trial_id,
        manifest_hash=ctx.condition.manifest_sha256,
        task_name=state.task.name,
        channel_id=channel_id,
    )
    # the user owns every trial channel of its task (also other attempts'): only this one
    await capture.add(setup.user.name, user_client, channel_only(channel_id))
    setup.observer = observer = ChannelObserver(user_client, channel_id, since, state.notify)
    await observer.start()


async def add_members_and_profiles(state: TrialState, ctx: JobContext) -> None:
    """Steps 5-7: agents as members, profiles where they differ, channel-member identities."""
    setup = state.setup
    channel_id, user = setup.channel_id, setup.user
    assert channel_id is not None and user is not None
    user_client = state.user_client(ctx)
    for slot in state.slots:
        pubkey = setup.agent_keys[slot.agent_id].pubkey
        await relay_ops.add_member(user_client, channel_id, pubkey, "member")
    profiles = [relay_ops.Profile(user, None, ctx.stable_clients)]
    profiles += [
        relay_ops.Profile(
            Identity(slot.agent_id, slot.kind, setup.agent_keys[slot.agent_id]),
            None,
            state.trial_clients,
            fresh=True,
        )
        for slot in state.slots
    ]
    profiles += [
        relay_ops.Profile(identity, entry.about, ctx.stable_clients)
        for entry, identity in setup.directory
    ]
    published = await relay_ops.publish_profiles(user_client, profiles)
    state.recorder.log(f"profiles: {published} published, {len(profiles) - published} current")
    for entry, identity in setup.directory:
        if entry.channel_member:
            role = "bot" if entry.role == "bot" else "member"
            await relay_ops.add_member(user_client, channel_id, identity.pubkey, role)


async def seed_memories(state: TrialState) -> None:
    """Step 8: `[[memory_seeds]]` as the orchestrator agent."""
    client = state.agent_client(state.orchestrator_id)
    for seed in state.task.fixture.memory_seeds:
        await relay_ops.relay_operation(
            functools.partial(client.mem_set, slug=seed.slug, value=seed.value)
        )


async def launch_agents(state: TrialState, ctx: JobContext) -> None:
    """Step 9: the workspace and home as the agents find them (§8.10), the oracle
    registration, then per agent its prompt and its `buzz-acp`."""
    setup = state.setup
    channel_id, user = setup.channel_id, setup.user
    assert channel_id is not None and user is not None
    with classified(ErrorType.ENVIRONMENT_START_ERROR):
        setup.files_before = await snapshot(state.env)
    oracle_port = await register_with_oracle(state, ctx)
    ctx.launched_secrets.update(trial_secrets(state, ctx))
    team = [
        TeamMember(slot.agent_id, slot.role, setup.agent_keys[slot.agent_id].pubkey)
        for slot in state.slots
    ]
    for slot, member in zip(state.slots, team, strict=True):
        with classified(ErrorType.ARTIFACT_HASH_MISMATCH):
            prompt = compose_roster_prompt(
                slot.entry,
                ctx.condition.artifact_root,
                me=member,
                team=team,
                channel_id=channel_id,
                user_name=user.name,
                user_pubkey=user.pubkey,
            )
        host_prompt = state.paths.system_prompt(slot.agent_id)
        write_text_atomic(host_prompt, prompt, mode=0o600)
        with classified(ErrorType.AGENT_LAUNCH_ERROR):
            agents_prompt = state.env.facts.paths.system_prompt(slot.agent_id)
            await state.env.put_file(host_prompt, agents_prompt)
            await start_agent(state, ctx, slot, oracle_port)


async def register_with_oracle(state: TrialState, ctx: JobContext) -> int | None:
    """Register with the process's oracle server (§4.5); its port, or None (no oracle)."""
    condition = ctx.condition
    if not condition.uses_oracle:
        return None
    setup, env = state.setup, state.env
    channel_id, user = setup.channel_id, setup.user
    assert channel_id is not None and user is not None
    with classified(ErrorType.AGENT_LAUNCH_ERROR):
        server = await ctx.oracle.ensure(
            condition.endpoint_config.oracle_endpoint_names(),
            await ctx.environments.host_listen_address(),
        )
        done = env.facts.paths.solve_state_dir(channel_id) / "done"
        server.register(
            oracle_registration(
                condition,
                state.slots,
                pubkeys={agent_id: keys.pubkey for agent_id, keys in setup.agent_keys.items()},
                trial_id=state.trial_id,
                channel_id=channel_id,
                user=user,
                env=env.facts.paths,
                solve_path=env.facts.paths.harbor_solve if state.task.is_harbor else None,
                log_path=state.paths.oracle_log,
                done_probe=lambda: _exists(env, done),
            )
        )
        setup.oracle_registered = True
    return server.port


async def _exists(env: TrialEnvironment, path: PurePath) -> bool:
    try:
        return (await env.exec(["test", "-e", str(path)])).exit_code == 0
    except EnvCommandError:
        return False


async def start_agent(
    state: TrialState, ctx: JobContext, slot: AgentSlot, oracle_port: int | None
) -> None:
    """One `buzz-acp` (§7.9), its ACP event log followed from the start (§7.10)."""
    setup, agent_id = state.setup, slot.agent_id
    assert setup.channel_id is not None
    env = agent_process_environment(
        ctx,
        slot,
        state.env.facts,
        trial_id=state.trial_id,
        keys=setup.agent_keys[agent_id],
        channel_id=setup.channel_id,
        oracle_port=oracle_port,
        agent_seconds=state.timeouts.agent_seconds,
    )
    follower = EventLogFollower(
        state.paths.events_log(agent_id),
        on_change=state.notify,
        on_bad_line=lambda line: state.recorder.log(
            f"{agent_id}: event log line is not a JSON object: {line}"
        ),
        on_llm_retry=lambda record: ctx.on_llm_retry(state.name, record.describe()),
    )
    setup.followers[agent_id] = follower
    logged_at = state.env.facts.paths.events_log(agent_id)
    setup.follow_tasks.append(asyncio.create_task(follow_event_log(state.env, logged_at, follower)))
    setup.agents[agent_id] = await state.env.start_agent(
        agent_id,
        env,
        stdout=state.paths.stdout_log(agent_id),
        stderr=state.paths.stderr_log(agent_id),
        on_exit=state.notify,
    )
    state.recorder.log(f"started {agent_id}")


async def follow_event_log(
    env: TrialEnvironment, logged_at: PurePath, follower: EventLogFollower
) -> None:
    """Feed the agent's event log into `follower` as it is written, until cancelled."""
    try:
        async with env.follow_file(logged_at, follower.path):
            await follower.follow()
    finally:
        follower.read_available()  # the tail written while the agent was stopping


async def wait_until_ready(state: TrialState) -> None:
    """Step 10: every agent's event log holds `subscribed` for the trial channel (≤ 60 s)."""
    deadline, setup = time.monotonic() + READINESS_SECONDS, state.setup
    while True:
        state.changed.clear()
        for agent in setup.agents.values():
            if agent.exit_code is not None:
                raise TrialError(ErrorType.AGENT_PROCESS_EXITED, describe_exit(state.paths, agent))
        pending = [
            agent_id
            for agent_id, follower in setup.followers.items()
            if setup.channel_id not in follower.state.subscribed_channels
        ]
        if not pending:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TrialError(
                ErrorType.AGENT_READINESS_TIMEOUT,
                f"agents not subscribed within {READINESS_SECONDS:g} s: {', '.join(pending)}",
            )
        await first_of(state.changed.wait(), None, remaining)
