"""What the tests share: a real JupyterHub process and its configurations, headless Chromium, a
fake Kubernetes API, the scenario replayer, the OpenAPI check, and the docs walk's stand-ins."""
