_MODELS = {}


def register_model(fn):
    if fn.__name__ in _MODELS:
        raise RuntimeError(f"An entry is already registered under the name '{fn.__name__}'.")
    _MODELS[fn.__name__] = fn
    return fn


def list_models():
    return sorted(_MODELS)


def create_model(name, **kwargs):
    return _MODELS[name](**kwargs)


def load_pretrained(model, name):
    raise RuntimeError(f"no network here: cannot download weights of {name}")
