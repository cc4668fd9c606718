"""One round's candidates: K replies to the same prompt, each compiled and judged as soon as it is
in, so one candidate compiles while another is on the GPU; given K requests, K attempts back, in
order.

A language model is asked K times at once (threads, at most `concurrency` in flight; the openai
client backs off on 429 by itself). The builtin author reads the history, not the prompt, so it is
asked in turn, each time with the round's earlier picks as not-yet-judged attempts, and never
proposes the same configuration twice in a round.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from kgen.loop.attempt import Attempt
from kgen.loop.candidate import extract_source
from kgen.loop.rundir import RunDir
from kgen.loop.task import Task
from kgen.models.base import Message, Model, Reply, Request
from kgen.textsafe import clean_reply

MAX_CONCURRENCY = 8  # model requests of one round in flight at once


@dataclass(frozen=True)
class Asked:
    """A model call's outcome: its reply or the exception it raised, and how long it took."""

    reply: Reply | None
    error: BaseException | None
    seconds: float

    def get(self) -> Reply:
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


def ask(model: Model, request: Request) -> Asked:
    started = time.monotonic()
    try:
        reply = model.complete(request)
    except BaseException as exc:  # handed to the loop's thread, logged, then raised there
        return Asked(None, exc, time.monotonic() - started)
    # Model text is data: no lone surrogates, NULs or control sequences reach any file.
    reply = replace(reply, text=clean_reply(reply.text),
                    give_up=clean_reply(reply.give_up) if reply.give_up else None)
    return Asked(reply, None, time.monotonic() - started)


def candidates(task: Task, model: Model, check, messages: tuple[Message, ...],
               history: tuple[Attempt, ...], run_dir: RunDir, count: int, first: int,
               round_number: int, concurrency: int = MAX_CONCURRENCY
               ) -> Generator[tuple[Reply, Attempt | None], None, None]:
    """(reply, attempt) for attempts first..first+count-1, in order; the attempt is None when the
    model gave up. `check(reply, number, round)` turns a reply into its Attempt. Each model call
    is logged to the transcript in order; a call that raised is logged, then raised here."""
    if count == 1:  # in this thread: Ctrl-C, SIGTERM and SIGHUP reach the call or the compile
        asked = ask(model, Request(messages, task, history))
        attempt = None
        if asked.reply is not None and not asked.reply.give_up:
            attempt = check(asked.reply, first, round_number)
        log_call(run_dir, model, messages, first, asked)
        reply = asked.get()
        yield reply, attempt
        return
    pool = ThreadPoolExecutor(max_workers=max(1, min(count, concurrency)),
                              thread_name_prefix="kgen-candidate")
    try:
        if model.is_language_model:
            jobs = [pool.submit(_ask_then_check, model, Request(messages, task, history), check,
                                first + i, round_number) for i in range(count)]
        else:
            jobs = _in_turn(task, model, check, messages, history, count, first, round_number,
                            pool)
        for number, job in enumerate(jobs, start=first):
            asked, attempt = job.result()
            log_call(run_dir, model, messages, number, asked)
            reply = asked.get()
            yield reply, (None if reply.give_up else attempt)
            if reply.give_up:
                return
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _ask_then_check(model: Model, request: Request, check, number: int,
                    round_number: int) -> tuple[Asked, Attempt | None]:
    asked = ask(model, request)
    if asked.reply is None or asked.reply.give_up:
        return asked, None
    return asked, check(asked.reply, number, round_number)


def _in_turn(task: Task, model: Model, check, messages: tuple[Message, ...],
             history: tuple[Attempt, ...], count: int, first: int, round_number: int,
             pool: ThreadPoolExecutor) -> list[Future]:
    """Ask a history-reading author K times in turn (it is fast), checking each pick at once."""
    jobs: list[Future] = []
    seen = list(history)
    for number in range(first, first + count):
        asked = ask(model, Request(messages, task, tuple(seen)))
        if asked.reply is None or asked.reply.give_up:
            done: Future = Future()
            done.set_result((asked, None))
            jobs.append(done)
            break
        jobs.append(pool.submit(_check_one, check, asked, number, round_number))
        seen.append(Attempt(number, round_number, extract_source(asked.reply.text)))
    return jobs


def _check_one(check, asked: Asked, number: int, round_number: int) -> tuple[Asked, Attempt]:
    return asked, check(asked.reply, number, round_number)


def log_call(run_dir: RunDir, model: Model, messages: tuple[Message, ...], number: int,
             asked: Asked) -> None:
    """The transcript line of one model call: messages, reply or error, usage, latency."""
    record = {"attempt": number, "model": model.name, "messages": list(messages)}
    if asked.reply is None:
        run_dir.log_call({**record, "error": f"{type(asked.error).__name__}: {asked.error}",
                          "latency_s": round(asked.seconds, 3)})
        return
    reply = asked.reply
    run_dir.log_call({**record, "reply": reply.text, "give_up": reply.give_up,
                      "usage": {"prompt_tokens": reply.usage.prompt_tokens,
                                "completion_tokens": reply.usage.completion_tokens},
                      "latency_s": round(reply.latency_s or asked.seconds, 3)})
