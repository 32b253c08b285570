//! Resolution: every key of the settings table read through the resolver (flag > variables >
//! file > default, with origins) and assembled into `Config`, section by section.
//!
//! Owns which key lands where and in what order keys are read (the first refused value is the
//! error reported) for the keys landing in `Config` itself; the structs the table generates
//! (`ModelSettings`, `Safety`, `LocalSettings`, `TuiSettings`, `WebSettings`, `ServeSettings`)
//! read their own keys, in declaration order, and are only called here in turn. The checks
//! particular to a value are the sections' (`web.rs`, `local.rs`, …), which sit below the table
//! and name no key; the generic reading of one key is `Resolver::given`/`setting` (`mod.rs`). It
//! must not read the file or the environment other than through the resolver.

use std::path::PathBuf;

use super::{
    AgentName, Config, ConfigError, ConfigFile, Dirs, LocalSettings, ModelSettings, Origin, Preset,
    Resolver, Safety, ServeSettings, Sourced, TuiSettings, WebSettings, Wire, invalid,
    is_env_var_name, mcp, model_size, providers, settings, tools,
};

impl Resolver<'_> {
    pub(super) fn resolve(&self, file: ConfigFile, dirs: &Dirs) -> Result<Config, ConfigError> {
        let cfg = self.file.map(|f| &f.config);
        let provider = self.provider()?;
        let preset = provider.value;
        let base_url = self.base_url(preset)?;
        let model = self.model(preset)?;
        let api_key_env = self.api_key_env(preset)?;
        let (work_dir, work_dir_refused) = self.work_dir(dirs)?;
        let agent = self.agent()?;
        let max_attempts = self.setting(&settings::MAX_ATTEMPTS)?;
        let max_rounds = self.setting(&settings::MAX_ROUNDS)?;
        let output_limit_bytes = self.setting(&settings::OUTPUT_LIMIT_BYTES)?;
        let tools = tools::resolve(cfg.map(|c| &c.tools), &|span| self.file_origin(span))?;
        let model_settings = ModelSettings::read(self)?;
        let model_size = self.setting(&settings::MODEL_SIZE)?;
        let small_model_off = model_size::resolve_off(self)?;
        let safety = Safety::read(self)?;
        let local = LocalSettings::read(self)?;
        let tui = TuiSettings::read(self)?;
        let web = WebSettings::read(self)?;
        let serve = ServeSettings::read(self)?;
        let mcp_agents = tools
            .iter()
            .find_map(|t| t.agents.as_ref())
            .map_or_else(|| mcp::DEFAULT_MCP_AGENTS.to_vec(), |a| a.value.clone());
        let mcp = mcp::resolve(
            self,
            cfg.map(|c| &c.mcp_servers),
            &work_dir.value,
            mcp_agents,
        )?;

        Ok(Config {
            file,
            data_dir: dirs.data_dir.clone(),
            provider,
            base_url,
            model,
            api_key_env,
            work_dir,
            work_dir_refused,
            agent,
            max_attempts,
            max_rounds,
            output_limit_bytes,
            model_settings,
            model_size,
            small_model_off,
            model_facts: model_size::ModelFacts::default(),
            tools,
            safety,
            local,
            tui,
            mcp,
            web,
            serve,
            home: self.home(),
        })
    }

    /// The provider preset: named by flag, env var or file, or the default one.
    fn provider(&self) -> Result<Sourced<&'static Preset>, ConfigError> {
        let Some(s) = self.given(&settings::PROVIDER)? else {
            let preset = if self.points_at_a_server()? {
                providers::server_preset()
            } else {
                providers::local_preset()
            };
            return Ok(Sourced::new(preset, Origin::Default));
        };
        let preset = providers::find(&s.value).ok_or_else(|| ConfigError::Invalid {
            origin: s.origin.clone(),
            key: "provider".into(),
            value: format!("{:?}", s.value),
            expected: format!("unknown provider; expected one of: {}", providers::names()),
        })?;
        Ok(Sourced::new(preset, s.origin))
    }

    /// With no provider named, whether the settings still say a server is wanted: a base URL,
    /// `OLLAMA_HOST`, or a model name that is neither a built-in catalog name nor a `.gguf`
    /// file. Such setups meant Ollama before the built-in engine existed and still do.
    fn points_at_a_server(&self) -> Result<bool, ConfigError> {
        let base_url = self.given(&settings::BASE_URL)?;
        let model = self.given(&settings::MODEL)?;
        Ok(base_url.is_some()
            || self.env.get("OLLAMA_HOST").is_some()
            || model.is_some_and(|m| !crate::catalog::runs_locally(&m.value)))
    }

    /// The server's address: flag, env var, file, `OLLAMA_HOST` for an Ollama server, or the
    /// preset's (none for the built-in engine). Refused when empty or holding whitespace.
    fn base_url(&self, preset: &'static Preset) -> Result<Sourced<String>, ConfigError> {
        let base_url = self
            .given(&settings::BASE_URL)?
            .or_else(|| {
                // Ollama's own variable is honoured as the default address of an Ollama server.
                let host = self
                    .env
                    .get("OLLAMA_HOST")
                    .filter(|_| preset.wire == Wire::Ollama)?;
                Some(Sourced::new(host.to_owned(), Origin::Env("OLLAMA_HOST")))
            })
            .unwrap_or_else(|| {
                Sourced::new(preset.base_url.to_owned(), Origin::Preset(preset.name))
            });
        if preset.wire == Wire::InProcess {
            return Ok(base_url);
        }
        if base_url.value.trim().is_empty() || base_url.value.chars().any(char::is_whitespace) {
            return Err(invalid(
                &base_url,
                "base_url",
                "expected a URL such as http://127.0.0.1:11434",
            ));
        }
        Ok(base_url)
    }

    /// The model's name: flag, env var, file, or the preset's default (which may be none).
    fn model(&self, preset: &'static Preset) -> Result<Sourced<Option<String>>, ConfigError> {
        Ok(match self.given(&settings::MODEL)? {
            Some(s) => Sourced::new(Some(s.value), s.origin),
            None => Sourced::new(
                preset.default_model.map(str::to_owned),
                Origin::Preset(preset.name),
            ),
        })
    }

    /// The NAME of the variable holding the API key (file only: a key never comes from a flag).
    fn api_key_env(&self, preset: &'static Preset) -> Result<Sourced<Option<String>>, ConfigError> {
        match self.given(&settings::API_KEY_ENV)? {
            Some(s) if !is_env_var_name(&s.value) => Err(invalid(
                &s,
                "api_key_env",
                "expected the NAME of an environment variable, such as OPENAI_API_KEY (never the key itself)",
            )),
            Some(s) => Ok(Sourced::new(Some(s.value), s.origin)),
            None => Ok(Sourced::new(
                preset.api_key_env.map(str::to_owned),
                Origin::Preset(preset.name),
            )),
        }
    }

    /// The starting agent: flag, env var, file, or `auto`.
    fn agent(&self) -> Result<Sourced<AgentName>, ConfigError> {
        match self.given(&settings::AGENT)? {
            Some(s) => {
                let agent = AgentName::find(&s.value).ok_or_else(|| {
                    invalid(
                        &s,
                        "agent",
                        &format!("expected one of: {}", AgentName::listing()),
                    )
                })?;
                Ok(Sourced::new(agent, s.origin))
            }
            None => Ok(Sourced::new(AgentName::Auto, Origin::Default)),
        }
    }

    /// The user's home (to warn when the work dir is or holds it): `HOME`, else the system's.
    pub(super) fn home(&self) -> Option<PathBuf> {
        self.env
            .get("HOME")
            .map(PathBuf::from)
            .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_owned()))
    }
}
