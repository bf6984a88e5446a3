pub mod openai_public;
