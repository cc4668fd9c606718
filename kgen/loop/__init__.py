"""The loop and everything around it: the task, prompts, the candidate's contract, attempts, the
run directory, the report, and the Run object that starts, resumes and closes a run."""
