"""Training: tasks from synthesized cases, teacher distillation, rewards and data exports."""
