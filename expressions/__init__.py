"""HudiExpression: the engine-agnostic predicate tree, its front ends and evaluators."""
