"""The GPU stage, parent side of the trust boundary: plan what can run here, hand a compiled
candidate to a sandboxed worker (kgen.sandbox), read its Evaluation back."""
